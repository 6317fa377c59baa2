"""The source tree's shape, checked (docs/architecture.md, "Layout"):

- each folder of src/ includes only the folders below it: util and abi at
  the bottom, then sampler, wire and metrics, then recorder and reader, then
  report; cli/ and plugin/ on top of what they embed;
- the plugin's rooms (plugin/README.md): plugin/common/ (shared services)
  over src/abi and src/util only; each engine, plugin/engines/<name>/, over
  common/, the engine interface (plugin/engines/engine.h) and src/ only,
  never another engine's header; plugin/engines/ itself (the interface and
  the table) over src/abi; the plugin's own files over common/ and the
  table, never one engine's folder; every engine folder has its row in
  plugin/engines/table.c;
- no include circle between modules (a module is a .c, its .h and its
  private _int.h), and no call circle between .c files (a.c calls a
  function b.c defines and b.c calls one of a.c's);
- no source file over 900 lines, no function over 150 lines;
- every record type, batch and channel name of the wire format is spelled
  in one place only, src/wire/vocab.h (and its Python copy,
  python/gpufl/_wire.py, which test_python_gpufl compares with it), and
  the scope and trace batches' cells come from its column lists;
- the command's subcommands are one table, cli/subcommands.c, which
  main.c dispatches from and help.c lists from;
- each folder of src/ has a README.md saying what it owns and may include;
- git tracks no compiled Python (.pyc, __pycache__/): .gitignore lists it,
  a `git add -A` must not bring it back (issue 20);
- no document sends users to chrome://tracing, which current Chromium no
  longer has: Perfetto and speedscope (docs/report.md);
- one version: CMakeLists.txt's project(... VERSION) is python/pyproject.toml's
  and both packages' __version__ (test_python_pip_install checks what pip
  records).

Usage: python3 tests/test_layout.py SOURCE_DIR (CTest: test_layout).
"""

import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), ".."))

# folder -> folders its files may include (besides itself and include/).
ALLOWED = {
    "src/util": set(),
    "src/abi": {"src/util"},
    "src/sampler": {"src/util", "src/sampler/backends"},
    "src/sampler/backends": {"src/util"},
    "src/wire": {"src/util", "src/abi"},
    "src/metrics": {"src/util", "src/abi"},
    "src/recorder": {"src/util", "src/abi", "src/sampler", "src/wire"},
    "src/reader": {"src/util", "src/wire"},
    "src/report": {"src/util", "src/wire", "src/reader", "src/recorder"},
    "cli": {"src/util", "src/recorder", "src/reader", "src/report"},
    "plugin": {"src/abi", "src/util", "plugin/common", "plugin/engines"},
    "plugin/common": {"src/abi", "src/util"},
    "plugin/engines": {"src/abi"},
    "src/upload": {"src/util", "src/wire"},
}
# The plugin's rooms with a README.md (an engine's folder needs none: the
# engines' README says what each one is).
PLUGIN_READMES = ("plugin", "plugin/common", "plugin/engines")
# Each engine's folder: what it may include (never another engine).
ENGINE_ALLOWED = {"src/abi", "src/util", "plugin/common", "plugin/engines"}


def engine_folders():
    d = os.path.join(ROOT, "plugin/engines")
    if not os.path.isdir(d):
        return []
    return ["plugin/engines/" + n for n in sorted(os.listdir(d))
            if os.path.isdir(os.path.join(d, n))]


for _engine in engine_folders():
    ALLOWED[_engine] = ENGINE_ALLOWED
MAX_FILE_LINES = 900
MAX_FUNCTION_LINES = 150
SOURCE_EXT = (".c", ".h", ".cpp")

failures = []


def fail(msg):
    failures.append(msg)


def rel(path):
    return os.path.relpath(path, ROOT)


def sources():
    for top in ALLOWED:
        d = os.path.join(ROOT, top)
        if not os.path.isdir(d):
            fail("%s/ is missing (docs/architecture.md, \"Layout\", names it)" % top)
            continue
        for name in sorted(os.listdir(d)):
            p = os.path.join(d, name)
            if os.path.isfile(p) and name.endswith(SOURCE_EXT):
                yield p


def includes(path):
    """The project files path includes by a quoted name, resolved."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            target = os.path.normpath(os.path.join(os.path.dirname(path), m.group(1)))
            if os.path.exists(target):
                out.append(target)
            elif not os.path.exists(os.path.join(ROOT, "include", m.group(1))):
                fail("%s: #include \"%s\" is neither beside it (by its relative path) nor a "
                     "public header" % (rel(path), m.group(1)))
    return out


def check_directions(graph):
    for path, targets in graph.items():
        folder = os.path.dirname(rel(path))
        for t in targets:
            tf = os.path.dirname(rel(t))
            if tf != folder and tf not in ALLOWED[folder]:
                why = ""
                if folder.startswith("plugin/engines/") and tf.startswith("plugin/engines/"):
                    why = " (no engine includes another engine's header: share it through " \
                          "plugin/common/ or the engine environment, engines/engine.h)"
                elif folder == "plugin" and tf.startswith("plugin/engines/"):
                    why = " (the plugin reaches an engine through the table, " \
                          "plugin/engines/engine.h, never by name)"
                fail("%s includes %s: %s/ may include only %s%s" % (
                    rel(path), rel(t), folder, ", ".join(sorted(ALLOWED[folder])) or "nothing",
                    why))


def module(path):
    """A module: a .c, its .h and its private _int.h."""
    m = os.path.splitext(path)[0]
    return m[:-4] if m.endswith("_int") else m


def check_circles(graph):
    edges = {}
    for path, targets in graph.items():
        edges.setdefault(module(path), set()).update(
            module(t) for t in targets if module(t) != module(path))
    report_circles(edges, "include circle")


def report_circles(edges, what):
    state = {}

    def visit(m, stack):
        state[m] = 1
        stack.append(m)
        for n in sorted(edges.get(m, ())):
            if state.get(n) == 1:
                cyc = stack[stack.index(n):] + [n]
                fail(what + ": " + " -> ".join(rel(c) for c in cyc))
            elif n not in state:
                visit(n, stack)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m, [])


def strip_code(text):
    """text without comments and string literals."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def defined_functions(path):
    """The functions path defines that other files may call (not static):
    clang-format puts a definition's opening brace alone in column 0."""
    with open(path, encoding="utf-8") as f:
        lines = strip_code(f.read()).split("\n")
    names, sig = set(), []
    for line in lines:
        if line == "{" and sig:
            head = " ".join(sig)
            m = re.search(r"(\w+)\s*\(", head)
            if m and not re.match(r"\s*(static|typedef|struct|enum|union)\b", head):
                names.add(m.group(1))
            sig = []
        elif not line.strip() or line.startswith(("}", "#")) or line.rstrip().endswith(";"):
            sig = []
        elif not line.startswith((" ", "\t")) or sig:
            sig.append(line)
    return names


def check_call_circles(files):
    """No circle of calls between the .c files: a.c calls b.c and b.c
    calls a.c means the two are one module or need a third below them."""
    defs = {}
    for p in files:
        for name in defined_functions(p):
            defs.setdefault(name, p)
    edges = {}
    for p in files:
        with open(p, encoding="utf-8") as f:
            used = set(re.findall(r"\b\w+\b", strip_code(f.read())))
        edges[p] = {defs[u] for u in used if u in defs and defs[u] != p}
    report_circles(edges, "call circle")


def check_sizes(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if len(lines) > MAX_FILE_LINES:
        fail("%s has %d lines (at most %d: split it by responsibility)" % (
            rel(path), len(lines), MAX_FILE_LINES))
    if not path.endswith((".c", ".cpp")):
        return
    # clang-format puts a function's braces in column 0.
    start = None
    for i, line in enumerate(lines):
        if line == "{" and start is None:
            start = i
        elif line.startswith("}") and start is not None and not line.startswith("};"):
            n = i - start + 2  # the signature line and both braces
            if n > MAX_FUNCTION_LINES:
                fail("%s:%d: a function of %d lines (at most %d: split it into named steps)" % (
                    rel(path), start, n, MAX_FUNCTION_LINES))
            start = None


def wire_names():
    """Every record type and batch name of src/wire/vocab.h."""
    with open(os.path.join(ROOT, "src/wire/vocab.h"), encoding="utf-8") as f:
        text = f.read()
    return set(re.findall(r"X\(\w+, (\w+), (?:ALL|DEVICE|SCOPE|SYSTEM)\b", text))


def check_one_vocabulary():
    names = wire_names()
    if len(names) < 18:
        fail("src/wire/vocab.h: found only %d wire names; the check cannot read it" % len(names))
    quoted = re.compile(r'"(%s)"' % "|".join(sorted(names)))
    places = [p for p in sources() if not rel(p).startswith("src/wire/vocab.")]
    py = os.path.join(ROOT, "python/gpufl")
    # (gpufl/__init__.py names functions shutdown, system_start, ...)
    places += [os.path.join(py, n) for n in sorted(os.listdir(py))
               if n.endswith(".py") and n not in ("_wire.py", "__init__.py")]
    for p in places:
        with open(p, encoding="utf-8") as f:
            for no, line in enumerate(f, 1):
                if p.endswith(".py"):
                    code = line.split("#")[0]
                    if code.startswith("__all__"):
                        continue  # a module's function names (viz.init), not records
                else:
                    code = re.sub(r"/\*.*?(\*/|$)", "", line.split("//")[0])
                    if code.lstrip().startswith("*"):
                        continue  # inside a comment
                for m in quoted.finditer(code):
                    if p.endswith(".py") and re.search(r"_wire\.(record|batch|columns)\(\s*$",
                                                       code[:m.start()]):
                        continue  # checked against the vocabulary by _wire
                    fail("%s:%d: the wire name \"%s\" is spelled here; take it from "
                         "src/wire/vocab.h (Python: gpufl._wire)" % (rel(p), no, m.group(1)))


def check_batch_cells_from_vocab():
    """The scope and trace batches' rows come from vocab.h's column lists
    (WRITE_BATCH in src/wire/batches.c, issue 34): a cell written from a
    row's field by hand is a second column list to keep in step."""
    path = os.path.join(ROOT, "src/wire/batches.c")
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if re.search(r"\bfl_put_(col|u64|i64)\(\s*d\s*,\s*r->", line):
                fail("%s:%d: a batch cell written by hand; write the batch with WRITE_BATCH "
                     "over its FL_COLS_ list (src/wire/vocab.h), a cell that is not the row's "
                     "field of its name as a CELL_<BATCH>_<COLUMN>" % (rel(path), no))


def check_one_subcommand_table():
    """The command's subcommands are the rows of cli/subcommands.c (issue
    34): main.c dispatches and help.c lists from that table alone, so no
    other file of cli/ names a subcommand's main or spells a list of them."""
    table = os.path.join(ROOT, "cli/subcommands.c")
    if not os.path.isfile(table):
        fail("cli/subcommands.c is missing: the one table of subcommands (cli_subs)")
        return
    with open(table, encoding="utf-8") as f:
        rows = re.findall(r'\{"([\w-]+)",\s*(cli_\w+_main)\b', f.read())
    if len(rows) < 5:
        fail("cli/subcommands.c: found only %d subcommand rows; the check cannot read it" %
             len(rows))
        return
    names = [n for n, _ in rows]
    mains = {m for _, m in rows}
    listing = re.compile(r"\b(%s)\b(, | or )\b(%s)\b" % ("|".join(names), "|".join(names)))
    row = re.compile(r'\{\s*"(%s)",\s*("|cli_\w+_main\b)' % "|".join(names))
    cli = os.path.join(ROOT, "cli")
    for name in sorted(os.listdir(cli)):
        p = os.path.join(cli, name)
        if not name.endswith(".c") or p == table:
            continue
        with open(p, encoding="utf-8") as f:
            text = f.read()
        code = strip_code(text)
        own = defined_functions(p)
        for m in sorted(mains - own):
            if re.search(r"\b%s\b" % m, code):
                fail("%s: names %s; dispatch a subcommand through cli_subs "
                     "(cli/subcommands.c), the one table of subcommands" % (rel(p), m))
        for no, line in enumerate(text.split("\n"), 1):
            if row.search(line):
                fail("%s:%d: a subcommand's row outside the table; add it to cli_subs "
                     "(cli/subcommands.c)" % (rel(p), no))
            for lit in re.findall(r'"((?:\\.|[^"\\])*)"', line):
                if listing.search(lit):
                    fail("%s:%d: a list of subcommands spelled by hand; make it from cli_subs "
                         "(cli/subcommands.c)" % (rel(p), no))


def check_one_exporter_table():
    """The exporters are the rows of src/report/export.h's FL_EXPORTERS
    (issue 34): the export's core dispatches through each row's hooks and
    the command takes the names from the table, so no product file but
    export.h names a format's id, none compares a format (`fmt ==`), none
    spells a list of the names by hand, and every fl_export_hooks defined
    is a row."""
    header = os.path.join(ROOT, "src/report/export.h")
    with open(header, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"#define FL_EXPORTERS\(FIRST, X\)(.*?)\n\n", text, re.S)
    rows = re.findall(r'\b(FL_EXPORT_\w+),\s*"([\w-]+)",\s*(\w+)', m.group(1)) if m else []
    if len(rows) < 2:
        fail("src/report/export.h: found %d rows of FL_EXPORTERS; the exporters are listed "
             "there, one row each" % len(rows))
        return
    ids = re.compile(r"\b(%s)\b" % "|".join(i for i, _, _ in rows))
    names = "|".join(re.escape(n) for _, n, _ in rows)
    listing = re.compile(r"(^|[^\w-])(%s)( or |\||, )(%s)\b" % (names, names))
    hooks = {h for _, _, h in rows}
    for top in ("src", "cli"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for name in sorted(files):
                p = os.path.join(dirpath, name)
                if not name.endswith((".c", ".h")) or p == header:
                    continue
                with open(p, encoding="utf-8") as f:
                    text = f.read()
                code = strip_code(text)
                if ids.search(code):
                    fail("%s: names a format's id (%s); take the row from fl_exporters "
                         "(src/report/export.h)" % (rel(p), ids.search(code).group(1)))
                if re.search(r"\bfmt\s*[!=]=", code) and (
                        name.startswith("export") or rel(p) == "cli/logs.c"):
                    fail("%s: compares a format (fmt ==); call the row's hooks "
                         "(src/report/export_int.h)" % rel(p))
                for h in re.findall(r"^const fl_export_hooks (\w+)\b", code, re.M):
                    if h not in hooks:
                        fail("%s: %s is not a row of FL_EXPORTERS (src/report/export.h)" %
                             (rel(p), h))
                for no, line in enumerate(text.split("\n"), 1):
                    for lit in re.findall(r'"((?:\\.|[^"\\])*)"', line):
                        if listing.search(lit):
                            fail("%s:%d: a list of export formats spelled by hand; make it "
                                 "from FL_EXPORTERS (FL_EXPORT_NAMES_*)" % (rel(p), no))


def check_one_section_table():
    """The report's sections are the rows of src/report/report_int.h's
    FL_REPORT_SECTIONS (issue 34): both renderings loop over them, so no
    other file of src/ names a section's bit (GPUFL_SECTION_ALL aside)."""
    table = os.path.join(ROOT, "src/report/report_int.h")
    with open(table, encoding="utf-8") as f:
        m = re.search(r"#define FL_REPORT_SECTIONS\(X\)(.*?)\n\n", f.read(), re.S)
    rows = re.findall(r"X\((GPUFL_SECTION_\w+),\s*\(", m.group(1)) if m else []
    if len(rows) < 10:
        fail("src/report/report_int.h: found %d rows of FL_REPORT_SECTIONS; the report's "
             "sections are listed there, one row each" % len(rows))
    bit = re.compile(r"\bGPUFL_SECTION_(?!ALL\b)\w+")
    for dirpath, _, files in os.walk(os.path.join(ROOT, "src")):
        for name in sorted(files):
            p = os.path.join(dirpath, name)
            if not name.endswith((".c", ".h")) or p == table:
                continue
            with open(p, encoding="utf-8") as f:
                hit = bit.search(strip_code(f.read()))
            if hit:
                fail("%s: names %s; render a section through its row of FL_REPORT_SECTIONS "
                     "(src/report/report_int.h)" % (rel(p), hit.group(0)))


def check_engine_rows():
    """Every engine folder is one row of plugin/engines/table.c (its const
    fl_engine, named fl_<x>_engine, defined in the folder)."""
    table = os.path.join(ROOT, "plugin/engines/table.c")
    if not os.path.isfile(table):
        fail("plugin/engines/table.c is missing: the plugin's engines are listed there")
        return
    with open(table, encoding="utf-8") as f:
        rows = set(re.findall(r"&(fl_\w+_engine)\b", strip_code(f.read())))
    for folder in engine_folders():
        d = os.path.join(ROOT, folder)
        defined = set()
        for n in sorted(os.listdir(d)):
            if n.endswith(".c"):
                with open(os.path.join(d, n), encoding="utf-8") as f:
                    defined |= set(re.findall(r"^const fl_engine (fl_\w+_engine)\b",
                                              f.read(), re.M))
        if len(defined) != 1:
            fail("%s/ defines %d const fl_engine (one: the engine's row)" % (folder, len(defined)))
        for name in defined - rows:
            fail("%s/: %s is not a row of plugin/engines/table.c" % (folder, name))


def check_readmes():
    for folder in ALLOWED:
        if (folder.startswith("src/") or folder in PLUGIN_READMES) and not os.path.isfile(
                os.path.join(ROOT, folder, "README.md")):
            fail("%s/ has no README.md saying what it owns and what it may include" % folder)


def check_no_bytecode_tracked():
    """Skipped (said) outside a git checkout, e.g. an unpacked tarball."""
    try:
        r = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
    except OSError:
        r = None
    if r is None or r.returncode != 0:
        print("test_layout: not a git checkout (or no git): tracked-bytecode check skipped")
        return
    for path in r.stdout.decode("utf-8", "replace").split("\0"):
        if path.endswith((".pyc", ".pyo")) or "__pycache__" in path.split("/"):
            fail("%s: compiled Python is tracked by git; git rm --cached it "
                 "(.gitignore lists __pycache__/)" % path)


def check_docs_viewers():
    docs = [os.path.join(ROOT, "README.md")]
    for top, _, names in os.walk(os.path.join(ROOT, "docs")):
        docs += [os.path.join(top, n) for n in sorted(names) if n.endswith(".md")]
    for p in docs:
        with open(p, encoding="utf-8") as f:
            for no, line in enumerate(f, 1):
                if "chrome://tracing" in line:
                    fail("%s:%d: chrome://tracing is gone from current Chromium; name "
                         "https://ui.perfetto.dev or https://www.speedscope.app" % (rel(p), no))


def check_versions():
    def grab(path, pattern):
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            m = re.search(pattern, f.read(), re.M)
        return m.group(1) if m else None
    want = grab("CMakeLists.txt", r"^project\(\w+ VERSION ([0-9.]+)")
    for path, pattern in (("python/pyproject.toml", r'^version = "([^"]*)"'),
                          ("python/gpu_profile/__init__.py", r'^__version__ = "([^"]*)"'),
                          ("python/gpufl/__init__.py", r'^__version__ = "([^"]*)"')):
        got = grab(path, pattern)
        if got != want:
            fail("%s: version %s, but CMakeLists.txt's project() says %s; make them equal"
                 % (path, got, want))


def main():
    graph = {p: includes(p) for p in sources()}
    check_directions(graph)
    check_circles(graph)
    check_call_circles([p for p in graph if p.endswith(".c")])
    for p in graph:
        check_sizes(p)
    check_one_vocabulary()
    check_batch_cells_from_vocab()
    check_one_subcommand_table()
    check_one_exporter_table()
    check_one_section_table()
    check_engine_rows()
    check_readmes()
    check_no_bytecode_tracked()
    check_docs_viewers()
    check_versions()
    for f in failures:
        print(f)
    print("test_layout: %d files, %d problems" % (len(graph), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
