"""Element layout strings (``ipc::element_format::name``) that membridge-view and other viewers draw by.

The grammar, shared with the C++ producers and membridge-view::

    points:<pos>[,<colour>]      pos: float3 | float4 (xyz used); colour: rgba8 | r32f
                                 fields packed in order from byte 0 of each element; stride >= their sum
    image:<rgba8|r32f>:<W>x<H>   row-major, stride = texel size (4)
    heightfield:r32f:<W>x<H>     row-major grid of heights, stride 4
    membridge.particles.v1       sample 03's particle format (drawn as points, stride 32)

With a frame timeline (FramePublisher) a laid-out buffer holds ``slots`` slots of ``size / slots``
bytes; frame f is slot ``f % slots``.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Layout", "points", "image", "heightfield", "PARTICLES_V1", "parse", "array_layout"]

_POSITIONS = {"float3": 12, "float4": 16}
_COLOURS = {"rgba8": 4, "r32f": 4}
_TEXELS = {"rgba8": 4, "r32f": 4}

PARTICLES_V1 = "membridge.particles.v1"
"""Sample 03's particle format (32 bytes per particle)."""


@dataclass(frozen=True)
class Layout:
    """A parsed layout string."""

    kind: str  #: "points", "image", "heightfield" or "particles"
    fields: tuple[str, ...]  #: points: (pos[, colour]); image/heightfield: (texel,)
    width: int = 0  #: image and heightfield only
    height: int = 0  #: image and heightfield only
    min_stride: int = 0  #: the smallest element stride the layout allows (bytes)

    def __str__(self) -> str:
        if self.kind == "points":
            return "points:" + ",".join(self.fields)
        if self.kind == "particles":
            return PARTICLES_V1
        return f"{self.kind}:{self.fields[0]}:{self.width}x{self.height}"


def points(position: str = "float4", colour: str | None = None) -> str:
    """``points:<position>[,<colour>]``, e.g. ``points("float4")`` or ``points("float3", "rgba8")``."""
    if position not in _POSITIONS:
        raise ValueError(f"points: position must be one of {sorted(_POSITIONS)}, not {position!r}")
    if colour is not None and colour not in _COLOURS:
        raise ValueError(f"points: colour must be one of {sorted(_COLOURS)}, not {colour!r}")
    return f"points:{position}" + (f",{colour}" if colour else "")


def _grid(kind: str, texel: str, width: int, height: int, allowed: dict[str, int]) -> str:
    if texel not in allowed:
        raise ValueError(f"{kind}: texel must be one of {sorted(allowed)}, not {texel!r}")
    if int(width) <= 0 or int(height) <= 0:
        raise ValueError(f"{kind}: width and height must be positive, not {width}x{height}")
    return f"{kind}:{texel}:{int(width)}x{int(height)}"


def image(texel: str, width: int, height: int) -> str:
    """``image:<rgba8|r32f>:<W>x<H>`` (row-major, stride 4)."""
    return _grid("image", texel, width, height, _TEXELS)


def heightfield(width: int, height: int) -> str:
    """``heightfield:r32f:<W>x<H>`` (row-major heights, stride 4)."""
    return _grid("heightfield", "r32f", width, height, {"r32f": 4})


def parse(text: str) -> Layout:
    """Parses a layout string; raises ValueError naming what is wrong."""
    if text == PARTICLES_V1:
        return Layout("particles", ("float4", "float4"), min_stride=32)
    kind, _, rest = text.partition(":")
    if kind == "points":
        fields = tuple(rest.split(",")) if rest else ()
        if not 1 <= len(fields) <= 2 or fields[0] not in _POSITIONS or (len(fields) == 2 and fields[1] not in _COLOURS):
            raise ValueError(f"layout {text!r}: expected points:<float3|float4>[,<rgba8|r32f>]")
        stride = _POSITIONS[fields[0]] + (_COLOURS[fields[1]] if len(fields) == 2 else 0)
        return Layout("points", fields, min_stride=stride)
    if kind in ("image", "heightfield"):
        texel, _, size = rest.partition(":")
        allowed = _TEXELS if kind == "image" else {"r32f": 4}
        w, _, h = size.partition("x")
        if texel not in allowed or not w.isdigit() or not h.isdigit() or int(w) == 0 or int(h) == 0:
            raise ValueError(f"layout {text!r}: expected {kind}:<{'|'.join(sorted(allowed))}>:<W>x<H>")
        return Layout(kind, (texel,), int(w), int(h), min_stride=4)
    raise ValueError(f"layout {text!r}: unknown kind (points, image, heightfield or {PARTICLES_V1})")


def array_layout(text: str, stride: int) -> tuple[str, tuple[int, ...]]:
    """The (dtype, row shape) a buffer of layout ``text`` and element ``stride`` is seen as:
    float32 rows for all-float elements (points:float4 -> ("float32", (4,))), uint8 texels for rgba8
    images (("uint8", (4,))), else the element's raw bytes (("uint8", (stride,))).
    An empty or unknown layout gives raw bytes."""
    try:
        parsed = parse(text)
    except ValueError:
        return ("uint8", (stride,) if stride > 0 else ())
    if stride and stride < parsed.min_stride:
        raise ValueError(f"layout {text!r} needs a stride of at least {parsed.min_stride} bytes, not {stride}")
    if parsed.kind == "image" and parsed.fields[0] == "rgba8":
        return ("uint8", (4,))
    if parsed.kind in ("image", "heightfield"):
        return ("float32", ())
    all_float = parsed.kind == "particles" or all(f in ("float3", "float4", "r32f") for f in parsed.fields)
    stride = stride or parsed.min_stride
    if all_float and stride % 4 == 0:
        return ("float32", (stride // 4,))
    return ("uint8", (stride,))
