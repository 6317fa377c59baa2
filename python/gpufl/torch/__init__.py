"""gpufl.torch - PyTorch ops on the kernels they launch.

Promise: while attached, every aten op PyTorch dispatches on this thread
is bracketed by gpufl.push_external_op(<op name>) / pop_external_op(), so
each CUDA kernel it launches carries the op (CUPTI external correlation,
kind CUSTOM1 and id FNV-1a 64 of the name, as GPUFlight's gpufl.torch);
the session's op_dict names the ids, and `gpu-profile report` shows an
"ops" section and hotspots --by op.  Importing this module never needs
torch; attach() does (a clear RuntimeError without it).  The op's own
result and exceptions pass through untouched.

    import gpufl, gpufl.torch
    gpufl.init(app_name="train", profiling_engine="Trace")
    with gpufl.torch.profile("step"):     # a gpufl scope named "step" too
        loss = model(x).sum(); loss.backward()

watch(model) also opens a gpufl scope per module forward, named by the
module's path in the model ("encoder.layers.0.fc"), so each kernel's
user_scope says which module launched it.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import gpufl as _gpufl

__all__ = ["attach", "detach", "profile", "watch", "unwatch", "op_name"]

_TORCH_MISSING = ("gpufl.torch needs the torch package (PyTorch 2.1 or later, for "
                  "torch.utils._python_dispatch.TorchDispatchMode): install torch, or "
                  "use gpufl.push_external_op()/pop_external_op() around your own ops")

_lock = threading.Lock()
_count = 0     # attach() calls not yet balanced by detach()
_mode = None   # the entered TorchDispatchMode
_mode_cls = None


def op_name(func) -> str:
    """The name an op is recorded under: its schema name ("aten::mm"),
    else its __name__ ("mm.default"), else str(func)."""
    name = getattr(func, "name", None)
    if callable(name):
        try:
            n = name()
            if isinstance(n, str) and n:
                return n
        except Exception:  # noqa: BLE001 - a name is best effort, never the op's failure
            pass
    n = getattr(func, "__name__", None)
    return n if isinstance(n, str) and n else str(func)


def _build_mode_class():
    try:
        from torch.utils._python_dispatch import TorchDispatchMode
    except ImportError as e:
        raise RuntimeError(_TORCH_MISSING) from e

    names = {}  # func -> its name: computed once per op overload
    fl = _gpufl

    class GpuflDispatchMode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            n = names.get(func)
            if n is None:
                n = names[func] = op_name(func)
            fl.push_external_op(n)
            try:
                return func(*args, **(kwargs or {}))
            finally:
                fl.pop_external_op()

    return GpuflDispatchMode


def attach() -> None:
    """Tag kernels with their aten op from now on (this thread's dispatch:
    PyTorch's mode stack).  Nested calls count: the last detach() ends it."""
    global _count, _mode, _mode_cls
    with _lock:
        if _count == 0:
            if _mode_cls is None:
                _mode_cls = _build_mode_class()
            m = _mode_cls()
            m.__enter__()
            _mode = m
        _count += 1


def detach() -> None:
    """Balance an attach(); extra calls do nothing."""
    global _count, _mode
    with _lock:
        if _count == 0:
            return
        _count -= 1
        if _count == 0 and _mode is not None:
            m, _mode = _mode, None
            m.__exit__(None, None, None)


@contextmanager
def profile(name=None):
    """attach() for the block; with a name, the block is also a gpufl
    scope of that name."""
    scope = _gpufl.Scope(name) if name is not None else None
    if scope is not None:
        scope.__enter__()
    try:
        attach()
        try:
            yield
        finally:
            detach()
    finally:
        if scope is not None:
            scope.__exit__(None, None, None)


_watched = {}  # id(model) -> its hook handles


def watch(model, prefix=None) -> None:
    """A gpufl scope around each submodule's forward, named by its path in
    model (prefix, else the model's class name, for the root): kernels'
    user_scope then names the module that launched them."""
    root = prefix or type(model).__name__
    handles = []
    for path, mod in model.named_modules():
        label = root + "." + path if path else root
        handles.append(mod.register_forward_pre_hook(_enter_hook(label)))
        handles.append(mod.register_forward_hook(_exit_hook()))
    _watched[id(model)] = handles


def unwatch(model) -> None:
    """Remove what watch(model) added."""
    for h in _watched.pop(id(model), []):
        h.remove()


_open = threading.local()  # this thread's scopes opened by watch's hooks


def _enter_hook(label):
    def hook(module, inputs):
        s = _gpufl.Scope(label)
        s.__enter__()
        stack = getattr(_open, "stack", None)
        if stack is None:
            stack = _open.stack = []
        stack.append(s)
    return hook


def _exit_hook():
    def hook(module, inputs, output):
        stack = getattr(_open, "stack", None)
        if stack:
            stack.pop().__exit__(None, None, None)
    return hook
