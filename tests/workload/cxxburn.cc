// SPDX-License-Identifier: MIT
// C++ workload for the demangling tests: a template member function in a
// namespace, an overloaded function and a lambda, frame pointers kept.
#include <chrono>
#include <cstdlib>

namespace work {
static volatile unsigned long sink;

template <typename T> struct Spinner {
	__attribute__((noinline)) void spin(T n)
	{
		for (T i = 0; i < n; i++)
			sink = sink + static_cast<unsigned long>(i) * 2654435761u;
	}
};

__attribute__((noinline)) void churn(int rounds, double)
{
	Spinner<long> s;
	for (int r = 0; r < rounds; r++)
		s.spin(200000);
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
