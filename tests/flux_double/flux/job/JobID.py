"""TEST DOUBLE of ``flux.job.JobID`` (flux-core 0.88): RFC 19 FLUID encodings.

Observed in fixtures/flux-0.88/true.txt: ``JobID(8086618112)`` has ``f58 'ƒDKb2qD'``,
``hex '0x1e2000000'``, ``f58plain 'fDKb2qD'``, ``kvs 'job.0000.0001.e200.0000'`` and
``str()`` is the f58 form.  (``words`` is not modelled.)
"""

from __future__ import annotations

_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_F58_PREFIXES = ("ƒ", "f")


def _f58(value: int) -> str:
    digits = ""
    while value:
        value, rem = divmod(value, 58)
        digits = _B58[rem] + digits
    return digits or "1"


def id_parse(text: str) -> int:
    """Parse any FLUID encoding; ``OSError(EINVAL)`` like the real ``flux_job_id_parse``."""
    text = text.strip()
    try:
        if text.startswith(_F58_PREFIXES):
            value = 0
            for char in text[1:]:
                value = value * 58 + _B58.index(char)
            return value
        if text.startswith("0x"):
            return int(text, 16)
        if text.startswith("job."):
            return int(text[4:].replace(".", ""), 16)
        if "." in text:
            return int(text.replace(".", ""), 16)
        return int(text, 10)
    except ValueError:
        raise OSError(22, "Invalid argument") from None


class JobID(int):
    """A Flux job id: an ``int`` with the RFC 19 encodings as properties."""

    orig_str: str

    def __new__(cls, value: int | str) -> JobID:
        jobid = value if isinstance(value, int) else id_parse(value)
        self = super().__new__(cls, jobid)
        self.orig_str = str(value)
        return self

    @property
    def dec(self) -> str:
        return str(int(self))

    @property
    def f58(self) -> str:
        return "ƒ" + _f58(int(self))

    @property
    def f58plain(self) -> str:
        return "f" + _f58(int(self))

    @property
    def hex(self) -> str:
        return "0x%x" % int(self)

    @property
    def dothex(self) -> str:
        digits = "%016x" % int(self)
        return ".".join(digits[i : i + 4] for i in range(0, 16, 4))

    @property
    def kvs(self) -> str:
        return "job." + self.dothex

    @property
    def orig(self) -> str:
        return self.orig_str

    def encode(self, encoding: str = "dec") -> str:
        return str(getattr(self, encoding))

    def __str__(self) -> str:
        return self.f58

    def __repr__(self) -> str:
        return f"JobID({int(self)})"
