"""pystack_child.py - a Python program whose call chains are known, for
tests/python/test_pystack.py: each line a frame is expected at carries a
"# @name" marker the test finds.  Prints one JSON line.

  direct   captures through tests/python/pystack_helper.c (plugin/stacks.c)
  session  gpufl.init(Trace, enable_stack_trace) over the fake driver and
           CUPTI calls (tests/fakes), launches through a call chain
  injected the same launches in a process CUDA injected the plugin into
  fake     gpufl.init(Trace, enable_stack_trace) with the fake plugin
           (tests/fakes/fake_cupti_plugin.c), its launch 11 through a chain
"""
import ctypes
import gc
import json
import os
import sys

OUT = {}
SITE_FILE = "/opt/venv/lib/python3.11/site-packages/pkg/mod.py"


def deep(n, fn):
    if n > 0:
        return deep(n - 1, fn)  # @deep_rec
    return fn()  # @deep_leaf


class Model:
    def forward(self, fn):
        return deep(2, fn)  # @forward


def chain_a(fn):
    return Model().forward(fn)  # @chain_a


def chain_b(fn):
    return fn()  # @chain_b


def direct():
    helper = ctypes.PyDLL(os.environ["GP_TEST_PYSTACK_HELPER"])
    nogil = ctypes.CDLL(os.environ["GP_TEST_PYSTACK_HELPER"])
    helper.helper_text.restype = ctypes.c_char_p
    helper.helper_note.restype = ctypes.c_char_p
    helper.helper_python_captures.restype = ctypes.c_ulonglong
    r = helper.helper_open()
    if r != 0:
        sys.exit(r)
    ids = []
    for _ in range(2):
        ids.append(chain_a(helper.helper_capture))  # @direct_loop
    ids.append(chain_b(helper.helper_capture))  # @direct_b
    ids.append(chain_b(nogil.helper_capture))  # @direct_nogil

    # Python -> C -> Python: the callback's frame between the C frames.
    def callback():
        return helper.helper_capture()  # @callback

    CB = ctypes.CFUNCTYPE(ctypes.c_uint)
    cb = CB(callback)
    helper.helper_call.argtypes = [CB]
    ids.append(chain_b(lambda: helper.helper_call(cb)))  # @direct_cb

    # A module of an installed package: named from the package's folder.
    ns = {}
    exec(compile("def in_pkg(fn):\n    return fn()\n", SITE_FILE, "exec"), ns)
    ids.append(ns["in_pkg"](helper.helper_capture))  # @direct_pkg
    OUT["ids"] = ids
    OUT["texts"] = [helper.helper_text(i).decode() for i in ids]
    OUT["note"] = helper.helper_note().decode()
    OUT["python_captures"] = helper.helper_python_captures()
    OUT["lines"] = [helper.helper_line(0), helper.helper_line(1)]
    OUT["version"] = "%d.%d.%d" % sys.version_info[:3]
    OUT["gc_enabled"] = gc.isenabled()  # held off during a capture only


def load_fakes():
    fake = os.environ["GP_TEST_FAKE_CUDA_DIR"]
    cuda = ctypes.CDLL(os.path.join(fake, "libcuda.so.1"), mode=ctypes.RTLD_GLOBAL)
    # PyDLL: the launch holds the GIL, as a framework's C++ op does.
    cupti = ctypes.PyDLL(os.path.join(fake, "libfake_cupti_api.so"), mode=ctypes.RTLD_GLOBAL)
    return cuda, cupti


def launches(cupti):
    assert chain_a(lambda: cupti.fake_cupti_launch(b"k_chain_a")) == 0  # @launch_a
    assert chain_b(lambda: cupti.fake_cupti_launch(b"k_chain_b")) == 0  # @launch_b


def session(log):
    cuda, cupti = load_fakes()
    import gpufl
    ok = gpufl.init(app_name="pystack", log_path=log, enable_stack_trace=True,
                    profiling_engine=gpufl.ProfilingEngine.Trace)
    assert ok, gpufl.last_error()
    assert cuda.cuInit(0) == 0
    launches(cupti)  # @session_launches
    gpufl.shutdown()


def fake_plugin(log):
    import gpufl
    ok = gpufl.init(app_name="pystack", log_path=log, enable_stack_trace=True,
                    profiling_engine=gpufl.ProfilingEngine.Trace)
    assert ok, gpufl.last_error()
    plugin = ctypes.PyDLL(os.environ["GPUFL_CUPTI_PLUGIN"], mode=os.RTLD_NOLOAD | os.RTLD_NOW)
    chain_a(lambda: plugin.fake_cupti_launch(11))  # @fake_launch
    chain_b(lambda: plugin.fake_cupti_sync(15))  # @fake_sync
    gpufl.shutdown()


def injected():
    cuda, cupti = load_fakes()
    assert cuda.cuInit(0) == 0
    plugin = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"], mode=os.RTLD_NOLOAD | os.RTLD_NOW)
    assert plugin.gpufl_injection_wait(60000) == 1
    launches(cupti)  # @injected_launches


def main():
    mode = sys.argv[1]
    if mode == "direct":
        direct()  # @main_direct
    elif mode == "session":
        session(sys.argv[2])  # @main_session
    elif mode == "fake":
        fake_plugin(sys.argv[2])  # @main_fake
    else:
        injected()  # @main_injected
    print(json.dumps(OUT))


main()  # @module
