"""pbwire - just enough of protobuf's wire format for the tests to read
qprof's pprof output without a generated decoder: varints, the fields of
one message, packed repeated ints."""


def varint(buf, i):
    """(value, next index) of the varint at buf[i]."""
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def fields(buf):
    """(field, wire type, value) of one message: ints for varint and fixed
    fields, bytes for length-delimited ones."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 1:
            v, i = int.from_bytes(buf[i:i + 8], "little"), i + 8
        elif wt == 5:
            v, i = int.from_bytes(buf[i:i + 4], "little"), i + 4
        else:
            raise ValueError(f"wire type {wt}")
        yield f, wt, v


def pairs(buf):
    """(field, value) of one message."""
    for f, _, v in fields(buf):
        yield f, v


def packed(v):
    """The ints of a repeated field: one varint, or a packed run of them."""
    if isinstance(v, int):
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out
