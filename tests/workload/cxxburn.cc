// SPDX-License-Identifier: MIT
// C++ workload for the demangling tests: a template member function in a
// namespace, an overloaded function and a lambda, a template function with
// a return type and std::sort's templates, frame pointers kept.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

namespace work {
static volatile unsigned long sink;

template <typename T> struct Spinner {
	__attribute__((noinline)) void spin(T n)
	{
		for (T i = 0; i < n; i++)
			sink = sink + static_cast<unsigned long>(i) * 2654435761u;
	}
};

template <typename T, typename Cmp>
__attribute__((noinline)) std::vector<T> sorted(std::vector<T> v, Cmp cmp)
{
	std::sort(v.begin(), v.end(), cmp);
	return v;
}

__attribute__((noinline)) void churn(int rounds, double)
{
	static std::vector<std::string> words;
	Spinner<long> s;

	if (words.empty())
		for (unsigned i = 0; i < 2000; i++)
			words.push_back(std::to_string(i * 2654435761u));
	for (int r = 0; r < rounds; r++)
		s.spin(200000);
	sink = sink + sorted(words, [](const std::string &a, const std::string &b) {
		return a < b;
	}).size();
}
} // namespace work

int main(int argc, char **argv)
{
	double secs = argc > 1 ? std::atof(argv[1]) : 0.5;
	auto t0 = std::chrono::steady_clock::now();

	while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < secs)
		work::churn(10, 1.0);
	return 0;
}
