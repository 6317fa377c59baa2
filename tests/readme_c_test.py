"""README.md's C programs hold to the example they abbreviate (issue 20):
every ```c block of README.md with a main() compiles against
include/ (-Wall -Werror), and each of its lines that prints (printf) or
guards a print on a validity bit is a line of examples/profile_call.c, so
the README cannot go back to printing an unsampled metric as 0.

Usage: python3 tests/readme_c_test.py SOURCE_DIR CC (CTest: test_readme_c).
"""

import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(sys.argv[1])
CC = sys.argv[2] if len(sys.argv) > 2 else "cc"


def c_blocks(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"^```c\n(.*?)^```", text, re.S | re.M)


def main():
    failures = []
    with open(os.path.join(ROOT, "examples", "profile_call.c"), encoding="utf-8") as f:
        example = {line.strip() for line in f}
    mains = [b for b in c_blocks(os.path.join(ROOT, "README.md")) if "int main(" in b]
    if not mains:
        failures.append("README.md: no ```c block with a main(); this test expects one")
    with tempfile.TemporaryDirectory() as tmp:
        for i, block in enumerate(mains):
            src = os.path.join(tmp, "readme_%d.c" % i)
            with open(src, "w", encoding="utf-8") as f:
                f.write(block)
            r = subprocess.run([CC, "-fsyntax-only", "-Wall", "-Werror", "-I",
                                os.path.join(ROOT, "include"), src],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True)
            if r.returncode != 0:
                failures.append("README.md C block %d does not compile:\n%s" % (i, r.stdout))
            for line in block.splitlines():
                s = line.strip()
                if ("printf(" in s and "stderr" not in s) or "valid &" in s:
                    if s not in example:
                        failures.append("README.md C block %d: '%s' is not a line of "
                                        "examples/profile_call.c; keep them the same" % (i, s))
    for f in failures:
        print(f)
    print("test_readme_c: %d blocks, %d problems" % (len(mains), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
