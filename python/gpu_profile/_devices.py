"""The `device` argument of GpuMonitor and gpu_profile (docs/python.md) as
the indices gp_options takes: an index from 0, "all", a GPU or MIG UUID
(written in full, or a prefix only one device has, case-insensitive, as
the command's --device takes it), or a list / tuple of indices and UUIDs.
A UUID is looked up in the backend's device list (list_fn, called at most
once and only when a UUID is given); a negative index is refused here, so
the C library's GP_ALL_DEVICES never reaches a Python message.
"""

ALL = "all"

_KINDS = "an int (a 0-based GPU index), \"all\", a GPU UUID (\"GPU-...\", or a " \
    "prefix only one device has), a MIG UUID (\"MIG-...\") or a non-empty list of them"


def _is_uuid(text):
    return text[:4].upper() in ("GPU-", "MIG-")


def _index(d, device):
    if isinstance(d, bool) or not isinstance(d, int):
        raise TypeError("device must be %s, not %r" % (_KINDS, device))
    if d < 0:
        raise ValueError("device %d is not a GPU index: use an index from 0, a UUID, or "
                         "device=\"all\" for every GPU" % d)
    return d


def _match(uuid, listing):
    """The index of the one listed device whose UUID starts with uuid."""
    hits = [i for i, u in listing if u.upper().startswith(uuid.upper())]
    if len(hits) == 1:
        return hits[0]
    seen = ", ".join("%d %s" % (i, u or "(no UUID)") for i, u in listing) or "none"
    if hits:
        raise ValueError("device %r: more than one device has this UUID prefix (%s): write "
                         "more of it" % (uuid, ", ".join(str(i) for i in hits)))
    raise ValueError("device %r: no device has this UUID (the backend lists: %s)"
                     % (uuid, seen))


def indices(device, list_fn):
    """device as ALL, an int, or a list of ints.  list_fn() -> [(index,
    uuid)] the backend's devices; its errors propagate."""
    if isinstance(device, str):
        if device == ALL:
            return ALL
        if _is_uuid(device):
            return _match(device, list_fn())
        raise TypeError("device must be %s, not %r" % (_KINDS, device))
    if isinstance(device, (list, tuple)):
        if not device:
            raise TypeError("device must be %s, not %r" % (_KINDS, device))
        listing = None
        out = []
        for d in device:
            if isinstance(d, str) and _is_uuid(d):
                if listing is None:
                    listing = list_fn()
                out.append(_match(d, listing))
            else:
                out.append(_index(d, device))
        return out
    return _index(device, device)
