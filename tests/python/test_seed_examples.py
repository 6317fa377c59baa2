"""Every Python example of the seed documents (000-003), run as written.

Each example is transcribed below as a literal string with its seed file and
a short name.  Two kinds of check:

- Transcription (against the seed files: a copy of seeds 000-003 in
  tests/python/seeds, or $GP_SEED_DIR): each transcription, whitespace-normalised, occurs in its
  seed's whitespace-normalised text, so a transcription cannot drift from
  the seed (seed 002 is a captured web page that lost its indentation; the
  transcriptions restore it, which the normalisation tolerates).  Every
  fenced block of the markdown seeds and every code-looking line of seed
  002 is covered by a listed example, runnable or not, and the number of
  examples per seed is fixed, so a new seed example cannot go unnoticed.
- Running: each runnable example runs in a fresh `python3` (sys.executable)
  with a fresh, empty temporary directory as its working directory and the
  fake-NVML environment CTest gives (GP_TEST_ENV: the fake libnvidia-ml.so.1
  first on LD_LIBRARY_PATH, its default scenario: one "Fake NVIDIA GPU"),
  and must exit 0.  What an example may get besides its own text is
  declared with it and kept minimal: a prelude run before it (an import the
  seed's block assumes from an earlier block, a recorded session for the
  examples that read an undefined `log_dir`), an epilogue of assertions run
  after it in the same namespace, checks of its output and files made by
  the test afterwards, and explicit substitutions of `...` placeholders
  that stand for a value (a `...` statement is valid Python and stays).
  When the example's last statement is an expression its value is kept in
  `_`, as the interactive interpreter does, for the epilogue to check.

The C++ examples (seed 002) are compiled and run by tests/cxx (CTest
test_cxx, test_cxx_compilers), which #includes each one from
tests/cxx/seed/<name>.inc; here each of those files must be its
transcription byte for byte, so the chain seed -> transcription -> compiled
text cannot drift.

Examples that need torch or cupy skip, naming the missing module, when it
cannot be imported (or no CUDA device is usable).  By hand, from the build
folder (with the environment of test_gpu_profile.py):

    LD_LIBRARY_PATH=tests/fake-nvml \\
    GPU_PROFILE_LIBRARY=$PWD/libgpuprofile.so.0 PYTHONPATH=../python \\
    python3 ../tests/python/test_seed_examples.py -v
"""

import ast
import collections
import glob
import importlib.util
import inspect
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_TESTS = os.environ.get("GP_TEST_SOURCE_DIR") or os.path.dirname(HERE)
SOURCE_ROOT = os.path.dirname(SOURCE_TESTS)
PYTHON_DIR = os.path.join(SOURCE_ROOT, "python")
# Seed 002's C++ blocks as tests/cxx compiles them (one file per example).
CXX_SEED_DIR = os.path.join(SOURCE_TESTS, "cxx", "seed")
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, PYTHON_DIR)

RUN_TIMEOUT_S = 60

# ------------------------------------------------------------------ model

Example = collections.namedtuple("Example", [
    "seed",      # "000" .. "003": the seed file NNN_*.txt
    "name",      # a short name (the test method is test_<seed>_<name>)
    "text",      # the transcription, literal
    "lang",      # "python", "sh", "c++", "formula"
    "doc_only",  # None: runnable; else why it is not run (a documentation block)
    "prelude",   # Python run before the example, in the same namespace
    "epilogue",  # Python run after it: assertions that it did its thing
    "subs",      # ((placeholder, value), ...): the only changes to the text
    "needs",     # modules that must be importable ("torch", "cupy") + "cuda"
    "needs_file",  # a file under python/ that must exist (else: skip)
    "files",     # {name: content} written to the working directory first
    "env",       # extra environment variables
    "check",     # name of a method of SeedExamplesRun checking the result
])


def ex(seed, name, text, lang="python", doc_only=None, prelude="", epilogue="", subs=(),
       needs=(), needs_file=None, files=None, env=None, check=None):
    return Example(seed, name, textwrap.dedent(text).strip("\n") + "\n", lang, doc_only,
                   textwrap.dedent(prelude), textwrap.dedent(epilogue), tuple(subs),
                   tuple(needs), needs_file, dict(files or {}), dict(env or {}), check)


# Preludes shared by several gpufl examples.
GFL_IMPORT = """\
    # The seed's block uses gfl from its Core Functions block above.
    import gpufl as gfl
"""
# Keeps the value every gfl.init() call returns (the examples discard it).
RECORD_INIT = """\
    import gpufl as _gfl
    _inits = []
    _real_init = _gfl.init
    def _recording_init(*args, **kwargs):
        _inits.append(_real_init(*args, **kwargs))
        return _inits[-1]
    _gfl.init = _recording_init
"""
# Seed 002's analyzer and report examples read an undefined `log_dir`: a
# small session of app "my_app" recorded first (Auto backend: the fake NVML).
RECORD_SESSION = """\
    import time
    import gpufl as _gfl
    assert _gfl.init(app_name="my_app", system_sample_rate_ms=10)
    with _gfl.Scope("seed_train"):
        time.sleep(0.05)
    _gfl.shutdown()
    log_dir = "my_app"  # log_path defaults to the app name
"""

# A train.py for the shell example: init + Scope + shutdown.
TRAIN_PY = """\
import gpufl as gfl

ok = gfl.init(app_name="train", system_sample_rate_ms=10)
with gfl.Scope("epoch"):
    pass
gfl.shutdown()
print("init returned", ok)
"""

EXAMPLES = [
    # ------------------------------------------------------------- seed 000
    ex("000", "import", """
        from gpu_profile import (
            gpu_profile,
            GpuMonitor,
            GpuSummary,
            GpuSample,
            ProfiledResult,
            GpuBackendError,
        )
        """,
       epilogue="""
        import dataclasses, gpu_profile as _gp
        for _n in ("gpu_profile", "GpuMonitor", "GpuSummary", "GpuSample",
                   "ProfiledResult", "GpuBackendError"):
            assert globals()[_n] is getattr(_gp, _n), _n
        assert dataclasses.is_dataclass(GpuSummary) and dataclasses.is_dataclass(GpuSample)
        assert issubclass(GpuBackendError, Exception)
        """),
    ex("000", "signature", """
        @gpu_profile(
            device: int = 0,
            interval_s: float = 0.2,
            backend: str = "auto",   # "auto" | "nvml" | "smi" | "none"
            strict: bool = True,
            sync_fn: Optional[Callable[[], None]] = None,
            warmup_s: float = 0.0,
            report: Union[bool, Callable[[GpuSummary], None]] = True,
            return_profile: bool = False,
        )
        """,
       doc_only="the seed calls it a simplified signature: annotations inside a call are not "
                "Python (SyntaxError, checked); its names and defaults are checked against "
                "inspect.signature(gpu_profile) instead"),
    ex("000", "gpumonitor", """
        with GpuMonitor(device=0, interval_s=0.2, sync_fn=...) as mon:
            ...
        summary = mon.summary
        """,
       prelude="""
        # The seed's block uses GpuMonitor from its import block above.
        from gpu_profile import GpuMonitor
        """,
       subs=[("sync_fn=...", "sync_fn=None")],
       epilogue="""
        from gpu_profile import GpuSummary
        assert isinstance(summary, GpuSummary), summary
        assert summary is mon.summary and not mon.running
        assert summary.backend == "nvml" and summary.name == "Fake NVIDIA GPU", summary
        assert summary.sample_count >= 2, summary.sample_count  # at start and at stop
        assert summary.util_gpu_mean == 42.0, summary.util_gpu_mean  # the fake's default
        """),
    # ------------------------------------------------------------- seed 001
    ex("001", "quick-example", """
        from gpu_profile import gpu_profile

        @gpu_profile(interval_s=0.2)
        def work():
            # GPU workload here
            ...

        work()
        """,
       epilogue="""
        assert work.__name__ == "work" and work.__wrapped__ is not None
        assert _ is None  # work()'s own return value, passed through
        """,
       check="check_summary_printed"),
    ex("001", "pytorch-matmul", """
        import torch
        from gpu_profile import gpu_profile

        @gpu_profile(interval_s=0.1, sync_fn=torch.cuda.synchronize, warmup_s=0.2)
        def matmul_bench():
            a = torch.randn(8192, 8192, device="cuda")
            b = torch.randn(8192, 8192, device="cuda")
            for _ in range(10):
                _ = a @ b

        matmul_bench()
        """,
       needs=("torch", "cuda"), check="check_summary_printed"),
    # ------------------------------------------------------------- seed 002
    ex("002", "cxx-include", """
        #include <gpufl/gpufl.hpp>
        """, lang="c++"),
    ex("002", "cxx-init-options", """
        namespace gpufl {

        struct InitOptions {
            // ── Identity ────────────────────────────────────────────────────
            std::string app_name = "gpufl";
            std::string log_path = ""; // defaults to "<app_name>.log"

            // ── Cloud upload ────────────────────────────────────────────────
            std::string backend_url = ""; // e.g. "https://api.gpuflight.com" (host only)
            std::string api_key = ""; // sent as `Authorization: Bearer <key>`
            std::string api_path = ""; // empty → "/api/v1"; override for proxy mounts
            bool remote_upload = false; // DEPRECATED v1.1, removed v1.2 (no-op; see api-reference)

            // ── What to capture ─────────────────────────────────────────────
            bool enable_stack_trace = false; // capture CPU stacks on launch + sync events
            bool enable_source_collection = true; // collect source for SASS correlation
            bool enable_external_correlation = true; // honor framework-pushed external IDs (PyTorch/JAX/XLA)
            bool enable_synchronization = true; // CUDA sync events (host-blocked time)
            bool enable_memory_tracking = false; // cudaMalloc / cudaFree timing — opt-in
            bool enable_cuda_graphs_tracking = false; // per-launch cudaGraphLaunch timing — opt-in

            // ── Sampling ────────────────────────────────────────────────────
            int system_sample_rate_ms = 0; // 0 = disabled; ~50–100 typical
            int kernel_sample_rate_ms = 0; // DEPRECATED (1.0.1) — no longer has any effect
            bool continuous_system_sampling = false; // renamed from sampling_auto_start

            // ── Profiling engine ────────────────────────────────────────────
            BackendKind backend = BackendKind::Auto;
            ProfilingEngine profiling_engine = ProfilingEngine::Monitor; // telemetry only; opt up the ladder

            // ── Advanced ────────────────────────────────────────────────────
            std::string config_file = ""; // local JSON config applied after defaults
            bool flush_logs_always = false;
            bool enable_debug_output = false;
            bool enabled = true; // global kill switch; false → init is a no-op
        };

        bool init(const InitOptions& opts);
        void shutdown();
        void generateReport(const std::string& output_path = "");
        }
        """, lang="c++"),
    ex("002", "cxx-scoping", """
        // Macro-based (recommended)
        GFL_SCOPE("name") {
            // kernels launched here are attributed to "name"
        }

        // Object-based
        {
            gpufl::ScopedMonitor scope("name");
            // ...
        }

        // Lambda-based
        gpufl::monitor("name", [&]() {
            // ...
        });
        """, lang="c++"),
    ex("002", "cxx-system-monitoring", """
        gpufl::systemStart("phase_name");
        // ... GPU work ...
        gpufl::systemStop("phase_name");
        """, lang="c++"),
    ex("002", "cxx-backend-kind", """
        enum class BackendKind { Auto, Nvidia, Amd, None };
        """, lang="c++"),
    ex("002", "cxx-profiling-engine", """
        enum class ProfilingEngine {
            Monitor, // Health metrics only — no CUPTI. The default.
            Trace, // + activity trace: kernels, memcpy, sync (no sampling)
            PcSampling, // + PC-level stall-reason sampling
            SassMetrics, // + per-instruction SASS counters
            RangeProfiler, // + hardware throughput counters (Perfworks)
            Deep, // PcSampling + SassMetrics in one run
        };
        """, lang="c++"),
    ex("002", "core-functions", """
        import gpufl as gfl

        # Function-style init — every InitOptions field is a kwarg.
        gfl.init(
            app_name="my_app",
            continuous_system_sampling=True,
            system_sample_rate_ms=50,
            backend=gfl.BackendKind.Auto,
            profiling_engine=gfl.ProfilingEngine.PcSampling,
        )

        with gfl.Scope("phase_name"):
            # GPU work here
            pass

        gfl.system_start("sampling")
        gfl.system_stop("sampling")

        gfl.shutdown()
        """,
       prelude=RECORD_INIT,
       epilogue="""
        assert _inits == [True], _inits
        assert not gfl.is_active() and gfl.session_dir() is None
        """,
       check="check_core_functions"),
    ex("002", "enabled-false", """
        gfl.init(app_name="my_app", enabled=False)   # init returns False; Scope/upload_logs/etc. all no-op
        """,
       prelude=GFL_IMPORT,
       epilogue="""
        assert _ is False, _
        assert not gfl.is_active() and gfl.session_dir() is None
        with gfl.Scope("after"):  # a no-op
            pass
        gfl.system_start("p"); gfl.system_stop("p"); gfl.shutdown()
        """,
       check="check_created_nothing"),
    ex("002", "gpufl-disabled-shell", """
        GPUFL_DISABLED=1 python train.py
        """, lang="sh",
       files={"train.py": TRAIN_PY},
       check="check_gpufl_disabled"),
    ex("002", "backend-none", """
        # "No backend" — for stub / test sessions.
        gfl.init(app_name="m", backend=gfl.BackendKind.None_)
        """,
       prelude=GFL_IMPORT,
       epilogue="""
        assert _ is True, _
        assert gfl.is_active()
        BK = gfl.BackendKind
        assert BK.None_ is getattr(BK, "None") is BK["None"], list(BK)
        assert int(BK.None_) == 3  # GPUFL_BACKEND_NONE, as C++'s BackendKind::None
        assert [m.name for m in BK] == ["Auto", "Nvidia", "Amd", "None"]
        try:
            compile("gfl.BackendKind.None", "<seed>", "eval")
        except SyntaxError:
            pass  # the seed: "that's a SyntaxError"
        else:
            raise AssertionError("gfl.BackendKind.None compiled")
        assert gfl.session_dir().startswith("m/"), gfl.session_dir()
        gfl.shutdown()
        """,
       check="check_backend_none"),
    ex("002", "analyzer", """
        from gpufl.analyzer import GpuFlightSession

        session = GpuFlightSession(log_dir, log_prefix="my_app", session_id=None)

        session.print_summary() # Executive summary
        session.inspect_scopes() # Scope timing analysis
        session.inspect_hotspots(top_n=5) # Top kernels by GPU time
        session.inspect_stalls() # PC sampling stall distribution
        session.inspect_profile_samples() # SASS/PC sample details
        session.inspect_perf_metrics() # Hardware counter results
        """,
       prelude=RECORD_SESSION,
       check="check_analyzer"),
    ex("002", "report", """
        from gpufl.report import generate_report, TextReport

        # One-liner
        text = generate_report(log_dir, log_prefix="my_app", top_n=10, output_path=None)

        # Class-based
        from gpufl.analyzer import GpuFlightSession
        session = GpuFlightSession(log_dir, log_prefix="my_app")
        report = TextReport(session, top_n=10)
        report.print() # stdout
        report.save("report.txt") # file
        text = report.generate() # string
        """,
       prelude=RECORD_SESSION + """\
    # The one-liner's text, before the class-based part reuses the name.
    import gpufl.report as _report
    _one_liner = []
    _real_generate_report = _report.generate_report
    def _recording_generate_report(*args, **kwargs):
        _one_liner.append(_real_generate_report(*args, **kwargs))
        return _one_liner[-1]
    _report.generate_report = _recording_generate_report
""",
       epilogue="""
        assert text.startswith("report  my_app  session "), text[:200]
        assert "seed_train" in text and "Fake NVIDIA GPU" in text, text
        with open("report.txt", encoding="utf-8") as f:
            assert f.read() == text
        assert _one_liner == [text], (_one_liner, text)
        """,
       check="check_report"),
    ex("002", "viz", """
        import gpufl.viz as viz   # v1.0.0+ only — see warning below

        viz.init("./logs/*.log")
        viz.show()
        """,
       prelude="""
        # The seed's pattern ./logs/*.log names the flat layout,
        # logs/<prefix>.<channel>.log; this recorder (as the seed's own
        # log_path row says) writes logs/<session_id>/<channel>.log.  So a
        # session of app "my_app" is recorded and its three files laid out
        # flat under the names the pattern matches.
        import os, shutil, time
        import gpufl as _gfl
        assert _gfl.init(app_name="my_app", log_path="logs", system_sample_rate_ms=10)
        with _gfl.Scope("seed_viz"):
            time.sleep(0.1)
        _gfl.shutdown()
        _sdir = _gfl.last_session_dir()
        for _ch in ("device", "scope", "system"):
            shutil.move(os.path.join(_sdir, _ch + ".log"),
                        os.path.join("logs", "my_app.%s.log" % _ch))
        os.rmdir(_sdir)
        assert sorted(os.listdir("logs")) == ["my_app.device.log", "my_app.scope.log",
                                              "my_app.system.log"], os.listdir("logs")
        # What show() prints, kept for the epilogue (and still printed).
        import io, sys
        class _Tee(io.StringIO):
            def write(self, s):
                sys.__stdout__.write(s)
                return super().write(s)
        sys.stdout = _printed = _Tee()
        """,
       epilogue="""
        import re, sys
        sys.stdout = sys.__stdout__
        assert _ is None  # show() returns nothing: it prints
        out = _printed.getvalue()
        assert out == viz.render(), (out, viz.render())
        (_s,) = viz.sessions()  # the three files are one session
        lines = out.splitlines()
        assert re.match(r"my_app  session [0-9a-f-]{36}$", lines[0]), lines[0]
        assert lines[1].startswith("start ") and " duration " in lines[1], lines[1]
        assert "GPU 0 Fake NVIDIA GPU" in lines[2], lines[2]
        # the fake NVML's util.gpu is 42 %: the fourth of eight blocks
        util = next(l for l in lines if l.startswith("GPU 0 util %"))
        assert "▄" in util and util.endswith("mean 42 max 42 %"), util
        scope = next(l for l in lines if l.startswith("seed_viz "))
        assert "█" in scope and "1× " in scope, scope
        assert lines[-1].startswith("legend: "), lines[-1]
        """),
    # ------------------------------------------------------------- seed 003
    ex("003", "busy-time-formula", """
        busy_time_est_s = duration_s * mean(util.gpu)/100
        """, lang="formula",
       prelude="""
        # The formula's names, from a region the sampler recorded: util.gpu
        # is every sample's util.gpu, duration_s the summary's.
        import time
        from statistics import mean
        from types import SimpleNamespace
        from gpu_profile import GpuMonitor
        with GpuMonitor(interval_s=0.01, keep_samples=True) as _mon:
            time.sleep(0.05)
        _s = _mon.summary
        duration_s = _s.duration_s
        util = SimpleNamespace(gpu=[x.util_gpu for x in _mon.samples])
        """,
       epilogue="""
        import math
        assert len(util.gpu) == _s.sample_count >= 2
        assert math.isclose(busy_time_est_s, _s.busy_time_est_s, rel_tol=1e-9), \\
            (busy_time_est_s, _s.busy_time_est_s)
        """),
    ex("003", "sync-fn-torch", """
        sync_fn=torch.cuda.synchronize
        """,
       needs=("torch", "cuda"),
       prelude="""
        import torch  # the snippet's name
        """,
       epilogue="""
        from gpu_profile import GpuMonitor
        with GpuMonitor(interval_s=0.05, sync_fn=sync_fn) as mon:
            (torch.ones(1024, 1024, device="cuda") @ torch.ones(1024, 1024, device="cuda")).sum()
        assert mon.summary.sample_count >= 2
        """),
    ex("003", "sync-fn-cupy", """
        import cupy as cp
        sync_fn = cp.cuda.Stream.null.synchronize
        """,
       needs=("cupy", "cuda"),
       epilogue="""
        from gpu_profile import GpuMonitor
        with GpuMonitor(interval_s=0.05, sync_fn=sync_fn) as mon:
            (cp.ones((1024, 1024)) @ cp.ones((1024, 1024))).sum()
        assert mon.summary.sample_count >= 2
        """),
    ex("003", "warmup", """
        GpuMonitor(warmup_s=1.0)
        """,
       prelude="""
        from gpu_profile import GpuMonitor
        """,
       epilogue="""
        import time
        mon = _
        assert isinstance(mon, GpuMonitor) and mon.warmup_s == 1.0
        with mon:  # shorter than the warmup: every sample is ignored
            time.sleep(0.25)
        s = mon.summary
        assert s.warmup_s == 1.0 and s.sample_count == 0 and s.samples_warmup >= 2, s
        assert s.util_gpu_mean is None
        """),
]

# How many examples (runnable or not) each seed has: a new seed example must
# be added above.
EXAMPLES_PER_SEED = {"000": 3, "001": 2, "002": 13, "003": 4}

# Lines of seed 002 that look like code but are prose or table cells (the
# coverage check below would otherwise ask for an example).
SEED_002_NOT_EXAMPLES = {
    "system_sample_rate_ms00 = disabled.": "field table row",
    "init() takes an enabled kwarg": "prose",
    "BackendKind has a value literally named None.": "prose",
    "ProfilingEngine needs no such alias": "prose",
    "enable_profiling=Falseprofiling_engine=": "migration table row",
    "enable_profiling=True (default)profiling_engine=": "migration table row",
    "enable_perf_scope=Trueprofiling_engine=": "migration table row",
    'remote_config="https://…"backend_url=': "migration table row",
}
# A line of seed 002 that starts like code (Python or C++).
SEED_002_CODE_LINE = re.compile(
    r"^(?:import |from \w|#include|namespace |struct |enum class |"
    r"(?:bool|int|void|std::string|BackendKind|ProfilingEngine) |GFL_SCOPE|gpufl::|"
    r"GPUFL_DISABLED=|\w+ = |\w+(?:\.\w+)*\(|\w+=|# |// |[{}()]|pass$|with |[A-Z]\w*, +//)")


def normalise(text):
    return re.sub(r"\s+", " ", text).strip()


def apply_subs(e):
    text = e.text
    for old, new in e.subs:
        text = text.replace(old, new)
    return text


def seed_dir():
    d = os.environ.get("GP_SEED_DIR")
    if d:
        return d
    # A copy of seeds 000-003 lives beside this test (tests/python/seeds).
    return os.path.join(HERE, "seeds")


def seed_text(seed):
    paths = glob.glob(os.path.join(seed_dir(), seed + "_*.txt"))
    if len(paths) != 1:
        return None
    with open(paths[0], encoding="utf-8") as f:
        return f.read()


def fenced_blocks(text):
    """The contents of the ``` blocks of a markdown text."""
    blocks, cur = [], None
    for line in text.splitlines():
        if line.strip().startswith("```"):
            if cur is None:
                cur = []
            else:
                blocks.append("\n".join(cur))
                cur = None
        elif cur is not None:
            cur.append(line)
    return blocks


# ---------------------------------------------------------- transcriptions


class TranscriptionTest(unittest.TestCase):
    """The transcriptions are the seeds' text, and every example is listed."""

    def seeds(self):
        texts = {s: seed_text(s) for s in EXAMPLES_PER_SEED}
        missing = [s for s, t in texts.items() if t is None]
        if missing:
            self.skipTest("seed documents %s not found in %s (set GP_SEED_DIR)"
                          % (", ".join(missing), seed_dir()))
        return texts

    def test_examples_listed_per_seed(self):
        got = collections.Counter(e.seed for e in EXAMPLES)
        self.assertEqual(dict(got), EXAMPLES_PER_SEED)
        names = [(e.seed, e.name) for e in EXAMPLES]
        self.assertEqual(len(names), len(set(names)), "duplicate example names")
        for e in EXAMPLES:
            self.assertIn(e.lang, ("python", "sh", "c++", "formula"), e.name)
            if e.lang == "c++":
                self.assertFalse(e.doc_only, "%s: tests/cxx covers it" % e.name)
        # Every file of tests/cxx/seed is one of the C++ examples.
        self.assertEqual(sorted(os.listdir(CXX_SEED_DIR)),
                         sorted(e.name + ".inc" for e in EXAMPLES if e.lang == "c++"))

    def test_every_transcription_occurs_in_its_seed(self):
        texts = self.seeds()
        norm = {s: normalise(t) for s, t in texts.items()}
        for e in EXAMPLES:
            with self.subTest(seed=e.seed, example=e.name):
                t = normalise(e.text)
                if t not in norm[e.seed]:
                    n = max(i for i in range(len(t) + 1) if t[:i] in norm[e.seed])
                    self.fail("seed %s, example %s: the transcription departs from the seed "
                              "after %r, at %r" % (e.seed, e.name, t[max(0, n - 60):n],
                                                   t[n:n + 60]))

    def test_substitutions_replace_placeholders_only(self):
        for e in EXAMPLES:
            for old, new in e.subs:
                with self.subTest(example=e.name, placeholder=old):
                    self.assertIn("...", old)  # a stand-in for a value
                    self.assertNotIn("...", new)
                    self.assertEqual(e.text.count(old), 1)
            # The run text differs from the transcription by exactly these.
            text = apply_subs(e)
            for old, new in reversed(e.subs):
                text = text.replace(new, old, 1)
            self.assertEqual(text, e.text, e.name)

    def test_every_fenced_block_is_an_example(self):
        texts = self.seeds()
        for seed in ("000", "001", "003"):
            blocks = [normalise(b) for b in fenced_blocks(texts[seed])]
            listed = sorted(normalise(e.text) for e in EXAMPLES if e.seed == seed)
            with self.subTest(seed=seed):
                self.assertEqual(sorted(blocks), listed)
                self.assertEqual(len(blocks), EXAMPLES_PER_SEED[seed])

    def test_every_code_line_of_seed_002_is_covered(self):
        texts = self.seeds()
        self.assertEqual(fenced_blocks(texts["002"]), [])  # the capture has no fences
        covered = [normalise(e.text) for e in EXAMPLES if e.seed == "002"]
        code_lines = 0
        for n, line in enumerate(texts["002"].splitlines(), 1):
            if not SEED_002_CODE_LINE.match(line):
                continue
            if any(line.startswith(p) for p in SEED_002_NOT_EXAMPLES):
                continue
            code_lines += 1
            with self.subTest(line=n):
                self.assertTrue(any(normalise(line) in c for c in covered),
                                "seed 002 line %d looks like code and is in no example: %r"
                                % (n, line))
        self.assertGreaterEqual(code_lines, 90)
        # Each exception is still there (a stale one would hide nothing).
        for prefix in SEED_002_NOT_EXAMPLES:
            self.assertTrue(any(line.startswith(prefix)
                                for line in texts["002"].splitlines()), prefix)


class DocOnlyBlocksTest(unittest.TestCase):
    def test_doc_only_reasons(self):
        doc = [e for e in EXAMPLES if e.doc_only]
        self.assertEqual(sorted((e.seed, e.name) for e in doc), [("000", "signature")])

    def test_simplified_signature_matches_the_decorator(self):
        e = next(e for e in EXAMPLES if e.name == "signature")
        with self.assertRaises(SyntaxError):
            compile(e.text, "<seed 000 signature>", "exec")
        from gpu_profile import gpu_profile
        documented = re.findall(r"^\s+(\w+): [^=]+= (.+?),(?:\s+#.*)?$", e.text, re.M)
        self.assertEqual(len(documented), 8, documented)
        params = inspect.signature(gpu_profile).parameters
        for name, default in documented:
            with self.subTest(parameter=name):
                self.assertIn(name, params)
                self.assertEqual(params[name].kind, inspect.Parameter.KEYWORD_ONLY)
                self.assertEqual(params[name].default, ast.literal_eval(default))


# ---------------------------------------------------------------- running

DRIVER = r'''
import ast, os, sys
harness = sys.argv[1]
ns = {"__name__": "__main__", "__builtins__": __builtins__}

def run(name, keep_last=False):
    path = os.path.join(harness, name)
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    last = None
    if keep_last and tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, path, "exec"), ns)
    if last is not None:  # as the interactive interpreter: the value in _
        ns["_"] = eval(compile(last, path, "eval"), ns)

sys.argv[:] = [os.path.join(harness, "example.py")]
run("prelude.py")
run("example.py", keep_last=True)
run("epilogue.py")
'''

_cuda_cache = {}


def cuda_usable(module):
    """Whether `module` (torch, cupy) sees a CUDA device, asked in a child."""
    if module not in _cuda_cache:
        code = {
            "torch": "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)",
            "cupy": "import cupy, sys; sys.exit(0 if cupy.cuda.runtime.getDeviceCount() else 1)",
        }[module]
        r = subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=RUN_TIMEOUT_S)
        _cuda_cache[module] = r.returncode == 0
    return _cuda_cache[module]


def child_env(extra=None):
    """The test's environment (GP_TEST_ENV from CTest) without anything that
    would change what an example does: no GPUFL_* variable, the fake NVML's
    default scenario, the fake nvidia-smi answering as a machine without a
    driver."""
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("GPUFL_", "FAKE_NVML_", "FAKE_SMI_"))}
    e.setdefault("PYTHONPATH", PYTHON_DIR)
    # The child runs elsewhere: relative paths (a run by hand) made absolute.
    for k in ("PYTHONPATH", "LD_LIBRARY_PATH", "PATH"):
        if e.get(k):
            e[k] = os.pathsep.join(os.path.abspath(p) if p else p
                                   for p in e[k].split(os.pathsep))
    if e.get("GPU_PROFILE_LIBRARY") and os.sep in e["GPU_PROFILE_LIBRARY"]:
        e["GPU_PROFILE_LIBRARY"] = os.path.abspath(e["GPU_PROFILE_LIBRARY"])
    e["PYTHONDONTWRITEBYTECODE"] = "1"
    e.update(extra or {})
    return e


def tree(root):
    """Every file and folder under root, relative, sorted."""
    out = []
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            out.append(os.path.relpath(os.path.join(d, n), root))
    return sorted(out)


class SeedExamplesRun(unittest.TestCase):
    """One test per example (test_<seed>_<name>); methods are added below."""

    def run_example(self, e):
        if e.doc_only:
            self.skipTest("not run: " + e.doc_only)
        if e.lang == "c++":
            return self.check_cxx_copy(e)
        for m in e.needs:
            if m == "cuda":
                continue
            if importlib.util.find_spec(m) is None:
                self.skipTest("needs the %s module, which is not importable here" % m)
        if "cuda" in e.needs:
            mod = next(m for m in e.needs if m != "cuda")
            if not cuda_usable(mod):
                self.skipTest("%s sees no usable CUDA device here" % mod)
        if e.needs_file and not os.path.exists(os.path.join(PYTHON_DIR, e.needs_file)):
            self.skipTest("python/%s does not exist (not in this release)" % e.needs_file)

        harness = tempfile.mkdtemp(prefix="gp-seed-harness-")
        cwd = tempfile.mkdtemp(prefix="gp-seed-%s-%s-" % (e.seed, e.name))
        self.addCleanup(shutil.rmtree, harness, True)
        self.addCleanup(shutil.rmtree, cwd, True)
        for name, content in e.files.items():
            with open(os.path.join(cwd, name), "w", encoding="utf-8") as f:
                f.write(content)
        env = child_env(e.env)
        if e.lang == "sh":
            # `python` is this test's interpreter, whatever PATH has.
            bindir = os.path.join(harness, "bin")
            os.mkdir(bindir)
            os.symlink(sys.executable, os.path.join(bindir, "python"))
            env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
            argv = ["/bin/sh", "-c", apply_subs(e)]
        else:
            for name, text in (("prelude.py", e.prelude), ("example.py", apply_subs(e)),
                               ("epilogue.py", e.epilogue), ("driver.py", DRIVER)):
                with open(os.path.join(harness, name), "w", encoding="utf-8") as f:
                    f.write(text)
            argv = [sys.executable, os.path.join(harness, "driver.py"), harness]
        r = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True,
                           timeout=RUN_TIMEOUT_S)
        self.assertEqual(r.returncode, 0, "seed %s example %s failed\n--- example:\n%s"
                         "--- stdout:\n%s--- stderr:\n%s"
                         % (e.seed, e.name, apply_subs(e), r.stdout, r.stderr))
        if e.check:
            getattr(self, e.check)(e, cwd, r)
        return r

    def check_cxx_copy(self, e):
        """A C++ example is compiled and run by CTest's test_cxx (and
        test_cxx_compilers: g++ and clang++), which #includes
        tests/cxx/seed/<name>.inc verbatim: that file is this transcription,
        byte for byte."""
        path = os.path.join(CXX_SEED_DIR, e.name + ".inc")
        self.assertTrue(os.path.isfile(path), "%s: no %s" % (e.name, path))
        with open(path, encoding="utf-8") as f:
            self.assertEqual(f.read(), e.text, "%s differs from the seed's transcription" % path)

    # --------------------------------------------- checks after the run

    def session_dirs(self, cwd, app):
        """The session folders under cwd/app, each with its three logs."""
        base = os.path.join(cwd, app)
        self.assertTrue(os.path.isdir(base), "no %s/ in %s" % (app, tree(cwd)))
        sessions = sorted(os.listdir(base))
        for s in sessions:
            self.assertRegex(s, r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-"
                                r"[0-9a-f]{12}$")
            self.assertEqual(sorted(os.listdir(os.path.join(base, s))),
                             ["device.log", "scope.log", "system.log"])
        return [os.path.join(base, s) for s in sessions]

    @staticmethod
    def read(path):
        with open(path, encoding="utf-8") as f:
            return f.read()

    def check_summary_printed(self, e, cwd, r):
        # The seed says "print": stdout, as the original package (issue 33).
        self.assertEqual(r.stderr, "")
        self.assertRegex(r.stdout, r"^\[GPU 0\] .*\[nvml\]\n")
        for line in ("  util.gpu: mean ", "  busy time (est): ", "  util trace: "):
            self.assertIn(line, r.stdout)
        self.assertEqual(tree(cwd), [])

    def check_core_functions(self, e, cwd, r):
        (s,) = self.session_dirs(cwd, "my_app")
        self.assertEqual(tree(cwd), ["my_app", os.path.relpath(s, cwd)] + [
            os.path.join(os.path.relpath(s, cwd), n)
            for n in ("device.log", "scope.log", "system.log")])
        self.assertIn('"phase_name"', self.read(os.path.join(s, "scope.log")))
        system = self.read(os.path.join(s, "system.log"))
        self.assertIn('"system_start"', system)
        self.assertIn('"sampling"', system)
        for log in ("device.log", "scope.log", "system.log"):
            self.assertIn('"type":"shutdown"', self.read(os.path.join(s, log)).replace(" ", ""))

    def check_created_nothing(self, e, cwd, r):
        self.assertEqual(tree(cwd), [])
        self.assertEqual((r.stdout, r.stderr), ("", ""))

    def check_gpufl_disabled(self, e, cwd, r):
        self.assertEqual(r.stdout, "init returned False\n")
        self.assertEqual(r.stderr, "")
        self.assertEqual(tree(cwd), ["train.py"])
        # The same train.py without the variable does record a session.
        other = tempfile.mkdtemp(prefix="gp-seed-control-")
        self.addCleanup(shutil.rmtree, other, True)
        with open(os.path.join(other, "train.py"), "w", encoding="utf-8") as f:
            f.write(TRAIN_PY)
        c = subprocess.run([sys.executable, "train.py"], cwd=other, env=child_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=RUN_TIMEOUT_S)
        self.assertEqual((c.returncode, c.stdout), (0, "init returned True\n"), c.stderr)
        self.assertEqual(len(self.session_dirs(other, "train")), 1)

    def check_backend_none(self, e, cwd, r):
        (s,) = self.session_dirs(cwd, "m")
        job_start = self.read(os.path.join(s, "device.log")).splitlines()[0]
        self.assertIn('"type":"job_start"', job_start)
        # No device backend: no device, though the fake NVML has one (Auto
        # would list it).
        self.assertIn('"devices":[]', job_start.replace(" ", ""))

    def check_analyzer(self, e, cwd, r):
        out = r.stdout
        self.assertRegex(out, r"(?m)^report  my_app  session [0-9a-f-]{36}$")
        self.assertIn("seed_train", out)  # inspect_scopes
        self.assertIn("hotspots", out)  # inspect_hotspots
        # inspect_stalls / _profile_samples / _perf_metrics: a Monitor session
        # has none of them, and each says which engine would record them.
        for engine in ("PcSampling", "SassMetrics", "RangeProfiler"):
            self.assertIn(engine, out)

    def check_report(self, e, cwd, r):
        report = self.read(os.path.join(cwd, "report.txt"))
        self.assertEqual(r.stdout, report)  # report.print()
        self.assertEqual(len(self.session_dirs(cwd, "my_app")), 1)


def _add_tests():
    for e in EXAMPLES:
        name = "test_%s_%s" % (e.seed, e.name.replace("-", "_"))

        def test(self, e=e):
            self.run_example(e)

        test.__doc__ = "seed %s: %s (%s)" % (e.seed, e.name, e.lang)
        setattr(SeedExamplesRun, name, test)


_add_tests()

if __name__ == "__main__":
    unittest.main()
