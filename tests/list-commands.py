#!/usr/bin/env python3
"""List the external commands that the project's host-side scripts call.

    tests/list-commands.py ROOT

Reads every host-side shell script (guest/, tests/, bench/, .ci/run), normalized
by `bash --pretty-print`, and the recipes of the Makefiles as `make -n` prints
them, takes the command word of every simple command and prints those that are
neither shell keywords, builtins, functions the scripts define, nor paths into
the repository. tests/fresh-root.sh checks that each one resolves on a machine
that has only what the install step installs. Scripts that run inside the
guest (busybox) are not host commands and are skipped.
"""
import os
import re
import shlex
import subprocess
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."

# Scripts that run in the guest's busybox, not on the host.
GUEST_SIDE = ("guest/init", "guest/run-suite", "tests/guest/", "bench/guest/")

KEYWORDS = {
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for",
    "in", "case", "esac", "select", "function", "time", "!", "{", "}", "[[", "]]",
    "coproc", ";;", "(", ")", "((", "))",
}
# Words that run the command after them (with their own options).
WRAPPERS = {"exec", "command", "env", "nice", "nohup", "time", "sudo"}
EXTERNAL_WRAPPERS = {"env", "nice", "nohup", "sudo"}


def host_scripts():
    files = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True,
                           text=True, check=True).stdout.split()
    for f in files:
        if f.startswith(GUEST_SIDE):
            continue
        path = os.path.join(ROOT, f)
        if f.endswith(".sh") or f == ".ci/run":
            yield path
        elif "." not in os.path.basename(f) and os.access(path, os.X_OK):
            with open(path, "rb") as fh:
                if fh.read(64).startswith(b"#!") and b"sh" in fh.readline():
                    yield path


def builtins():
    out = subprocess.run(["bash", "-c", "compgen -b; compgen -k"],
                         capture_output=True, text=True).stdout
    return set(out.split())


def strip_heredocs(text):
    out, end = [], None
    for line in text.splitlines():
        if end is not None:
            if line.strip() == end:
                end = None
            continue
        m = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line)
        if m and "<<<" not in line:
            end = m.group(1)
        out.append(line)
    return "\n".join(out)


def split_commands(text):
    """Yield the token lists of the simple commands in normalized bash text."""
    text = strip_heredocs(text).replace("\\\n", " ")
    text = re.sub(r"\$\{[^}]*\}", "X", text)  # parameter expansions
    text = re.sub(r"\$\(\(.*?\)\)", "X", text)  # arithmetic
    text = re.sub(r"\b[A-Za-z_]\w*\+?=\([^)]*\)", "X=", text)  # array assignments
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        bare = re.sub(r"'[^']*'|\"[^\"]*\"", "", line)
        if bare.endswith(")") and "(" not in bare:
            continue  # a case pattern
        # Command substitutions start commands of their own.
        # An escaped \$( is text, not a substitution.
        line = re.sub(r"(?<!\\)\$\(", " ; ", line).replace("`", " ; ")
        try:
            lex = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
            lex.whitespace_split = True
            lex.commenters = "#"
            toks = list(lex)
        except ValueError:
            continue
        cur = []
        for t in toks:
            if t and set(t) <= set(";&|()"):
                if cur:
                    yield cur
                cur = []
            else:
                cur.append(t)
        if cur:
            yield cur


def command_words(toks):
    """The command word of a simple command, and the external wrappers before it."""
    words = []
    i = 0
    redirect = False
    while i < len(toks):
        t = toks[i]
        if redirect:
            redirect = False
        elif t.isdigit() and i + 1 < len(toks) and toks[i + 1][:1] in ("<", ">"):
            pass  # a file descriptor number: "2>" after ")" lexes as "2", ">"
        elif t in ("<", ">", ">>", "<<", "<<<", ">&", "<&") or re.fullmatch(r"\d?[<>]+&?", t):
            redirect = True
        elif t in ("for", "select", "case"):
            return words
        elif t in KEYWORDS:
            pass
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=.*", t):
            pass  # assignment
        elif t in WRAPPERS:
            if t in EXTERNAL_WRAPPERS:
                words.append(t)
        elif t == "timeout":
            words.append(t)
            # timeout [-k N] DURATION CMD...
            i += 1
            while i < len(toks) and toks[i].startswith("-"):
                i += 2 if toks[i] in ("-k", "-s") else 1
            i += 1
            continue
        elif t.startswith("-") and i > 0 and toks[i - 1] in WRAPPERS | {"-v", "-i"}:
            pass  # an option of a wrapper: command -v, env -i
        elif t == "chroot":
            words.append(t)
            return words  # the rest runs in another root (Debian sid's)
        else:
            return words + [t]
        i += 1
    return words


def main():
    bi = builtins()
    cmds = {}
    funcs = set()
    texts = []
    for path in host_scripts():
        res = subprocess.run(["bash", "--pretty-print", path], capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit(f"list-commands: bash cannot parse {path}: {res.stderr.strip()}")
        texts.append((path, res.stdout))
        # Function definitions, also those bash prints inside a one-line block.
        funcs.update(re.findall(r"([A-Za-z_][\w-]*) \(\)\s*\n\s*\{", res.stdout))
    for mk in ("Makefile",):
        res = subprocess.run(["make", "-s", "-n", "-B", "-C", ROOT, "all", "static",
                              "check", "fuzz", "bench", "OUT=/nonexistent-out"],
                             capture_output=True, text=True)
        texts.append((mk, res.stdout))
    def scan(text):
        # The first word of every command substitution, also inside ${...:-$(cmd)}.
        for w in re.findall(r"(?<!\\)\$\(\s*([A-Za-z][\w.+-]*)", text):
            yield [w]
        for toks in split_commands(text):
            yield toks
            # bash -c "...": the string is a script of its own.
            if toks and toks[0] in ("bash", "sh") and "-c" in toks[1:-1]:
                yield from scan(toks[toks.index("-c") + 1])

    for path, text in texts:
        for toks in scan(text):
            for w in command_words(toks):
                if w in bi or w in funcs or w in KEYWORDS:
                    continue
                if "$" in w or "/" in w or w.startswith("-"):
                    continue  # variables, our own binaries and scripts, options
                if not re.fullmatch(r"[A-Za-z0-9_.+-]+", w):
                    continue
                cmds.setdefault(w, os.path.relpath(path, ROOT))
    for c in sorted(cmds):
        print(f"{c}\t{cmds[c]}")


main()
