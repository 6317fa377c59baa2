"""README.md keeps up with the command (issue 32, point 25): its
"Options" paragraph names every option of the run form that `gpu-profile
help --options` lists (the table the bash completion reads too), the
virtual environment its Python line makes (`v/`) is ignored by git, and
the uninstall it documents exists.

Usage: python3 tests/readme_options_test.py SOURCE_DIR GPU_PROFILE
(CTest: test_readme_options).
"""

import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1])
PROG = sys.argv[2]


def options_paragraph(readme):
    m = re.search(r"^Options\b.*?(?=\n\n)", readme, re.S | re.M)
    return m.group(0) if m else ""


def v_ignored():
    """git's own answer where this is a checkout, else .gitignore's lines."""
    if shutil.which("git") and os.path.exists(os.path.join(ROOT, ".git")):
        r = subprocess.run(["git", "-C", ROOT, "check-ignore", "-q", "v/bin/python3"])
        if r.returncode in (0, 1):
            return r.returncode == 0
    with open(os.path.join(ROOT, ".gitignore"), encoding="utf-8") as f:
        return any(line.strip() in ("/v/", "v/", "/v") for line in f)


def main():
    failures = []
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    para = options_paragraph(readme)
    if not para:
        failures.append("README.md: no paragraph starting 'Options' (the run form's options)")
    out = subprocess.run([PROG, "help", "--options"], check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    opts = [line.split("\t")[0] for line in out.splitlines() if line.startswith("-")]
    if len(opts) < 20:
        failures.append("gpu-profile help --options listed only %d options" % len(opts))
    missing = [o for o in opts if not re.search(r"`%s[ `]" % re.escape(o), para)]
    if missing:
        failures.append("README.md's Options paragraph lacks: " + ", ".join(missing))
    if "v/bin/pip" in readme and not v_ignored():
        failures.append("README.md's venv v/ is not ignored by git: add /v/ to .gitignore")
    if "scripts/uninstall.sh" not in readme:
        failures.append("README.md does not say how to uninstall (scripts/uninstall.sh)")
    if not os.path.isfile(os.path.join(ROOT, "scripts", "uninstall.sh")):
        failures.append("scripts/uninstall.sh is missing")
    for f in failures:
        print("FAIL: " + f)
    print("readme_options_test: %d options checked, %d problems" % (len(opts), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
