"""Tofino through Stratum: the device config a P4Runtime pipeline push
carries, and where the Tofino program's files are.

Stratum's Tofino server (``stratum_bfrt``) takes, as the ``p4_device_config``
of SetForwardingPipelineConfig, one serialized protobuf message,
``stratum.hal.barefoot.BfPipelineConfig`` (stratum/hal/lib/barefoot/bf.proto;
Stratum's own packer is stratum/hal/bin/barefoot/bf_pipeline_builder.cc and
its reader bf_pipeline_utils.cc:ExtractBfPipelineConfig, which accepts
nothing else)::

    message BfPipelineConfig {
      message Profile {
        string profile_name = 1;         // the P4 pipeline's name ("pipe")
        bytes context = 2;               // <pipe>/context.json
        bytes binary = 3;                // <pipe>/tofino.bin (tofino2.bin on Tofino 2)
        repeated uint32 pipe_scope = 4;  // hardware pipes this profile runs on
      }
      string p4_name = 1;             // the program's name
      bytes bfruntime_info = 2;       // bf-rt.json
      repeated Profile profiles = 3;
    }

The values come from bf-p4c's output folder, as bf_pipeline_builder takes
them: the ``<program>.conf`` bf-p4c writes names the program
(``p4_devices[0].p4_programs[0]["program-name"]``), its ``bfrt-config`` and,
per pipeline, ``p4_pipeline_name``, ``context``, ``config`` and
``pipe_scope``. This module encodes the message itself (protobuf wire
format, fields in number order, ``pipe_scope`` packed as proto3 writes it),
so the controller needs neither Stratum's .proto nor its tools; the tests
decode the bytes with a descriptor built from the message above.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from .errors import PipelineMismatch

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHIPS = ("tofino", "tofino2")
#: bf-p4c's --arch for each chip.
CHIP_ARCH = {"tofino": "tna", "tofino2": "t2na"}
#: The committed P4Info of the Tofino program, per chip (make p4-tna).
TOFINO_BUILD = os.path.join(REPO_ROOT, "p4src", "build", "tofino")
#: Where make p4-tna puts bf-p4c's whole output (not committed), per chip.
COMPILE_DIR = os.path.join(REPO_ROOT, "build", "tofino")


def committed_p4info(chip: str = "tofino") -> str:
    return os.path.join(TOFINO_BUILD, f"cc_switch.{chip}.p4info.bin")


def compile_dir(chip: str = "tofino") -> str:
    return os.path.join(COMPILE_DIR, chip)


@dataclass
class Profile:
    """One P4 pipeline of the program and the hardware pipes it runs on."""
    profile_name: str
    context: bytes
    binary: bytes
    pipe_scope: List[int] = field(default_factory=list)


@dataclass
class BfPipelineConfig:
    p4_name: str
    bfruntime_info: bytes
    profiles: List[Profile] = field(default_factory=list)

    # -- protobuf wire format ------------------------------------------------
    def encode(self) -> bytes:
        out = bytearray()
        _string(out, 1, self.p4_name)
        _bytes(out, 2, self.bfruntime_info)
        for p in self.profiles:
            sub = bytearray()
            _string(sub, 1, p.profile_name)
            _bytes(sub, 2, p.context)
            _bytes(sub, 3, p.binary)
            if p.pipe_scope:
                packed = bytearray()
                for s in p.pipe_scope:
                    packed += _varint(int(s))
                _bytes(sub, 4, bytes(packed))
            _bytes(out, 3, bytes(sub))
        return bytes(out)

    @classmethod
    def decode(cls, data: bytes) -> "BfPipelineConfig":
        """The inverse of encode() (and of any conforming protobuf writer:
        fields in any order, pipe_scope packed or not)."""
        cfg = cls("", b"", [])
        for num, wire, val in _fields(data, "BfPipelineConfig"):
            if not _set_field(cfg, _CONFIG_FIELDS, num, wire, val) and (num, wire) == (3, 2):
                p = Profile("", b"", b"", [])
                for n, w, v in _fields(val, "BfPipelineConfig.Profile"):
                    if _set_field(p, _PROFILE_FIELDS, n, w, v) or n != 4:
                        continue
                    if w == 0:
                        p.pipe_scope.append(v)
                    elif w == 2:  # packed
                        pos = 0
                        while pos < len(v):
                            s, pos = _read_varint(v, pos, "pipe_scope")
                            p.pipe_scope.append(s)
                cfg.profiles.append(p)
        return cfg

    def describe(self) -> dict:
        return {"p4_name": self.p4_name, "bfruntime_info_bytes": len(self.bfruntime_info),
                "profiles": [{"profile_name": p.profile_name, "pipe_scope": p.pipe_scope,
                              "context_bytes": len(p.context), "binary_bytes": len(p.binary)}
                             for p in self.profiles]}


#: The length-delimited scalar fields: number -> (attribute, is text).
_CONFIG_FIELDS = {1: ("p4_name", True), 2: ("bfruntime_info", False)}
_PROFILE_FIELDS = {1: ("profile_name", True), 2: ("context", False), 3: ("binary", False)}


def _set_field(obj, spec: dict, num: int, wire: int, val) -> bool:
    """Sets a string/bytes field of `obj` named in `spec`; False if `num`
    is not one of them."""
    if num not in spec or wire != 2:
        return False
    name, text = spec[num]
    setattr(obj, name, val.decode("utf-8") if text else val)
    return True


def _varint(n: int) -> bytes:
    if n < 0:
        raise ValueError("negative varint")
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _bytes(out: bytearray, num: int, data: bytes) -> None:
    # proto3 leaves out empty scalars; a reader cannot tell them apart.
    if data:
        out += _varint(num << 3 | 2) + _varint(len(data)) + data


def _string(out: bytearray, num: int, s: str) -> None:
    _bytes(out, num, s.encode("utf-8"))


def _read_varint(data: bytes, pos: int, what: str) -> Tuple[int, int]:
    n, shift = 0, 0
    while True:
        if pos >= len(data):
            raise PipelineMismatch(f"not a {what}: truncated varint")
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, pos
        shift += 7
        if shift > 63:
            raise PipelineMismatch(f"not a {what}: varint too long")


def _fields(data: bytes, what: str):
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos, what)
        num, wire = key >> 3, key & 7
        if wire == 0:
            val, pos = _read_varint(data, pos, what)
        elif wire == 2:
            n, pos = _read_varint(data, pos, what)
            if pos + n > len(data):
                raise PipelineMismatch(f"not a {what}: field {num} runs past the end")
            val, pos = data[pos:pos + n], pos + n
        elif wire == 1:
            val, pos = data[pos:pos + 8], pos + 8
        elif wire == 5:
            val, pos = data[pos:pos + 4], pos + 4
        else:
            raise PipelineMismatch(f"not a {what}: wire type {wire} of field {num}")
        yield num, wire, val


# -- from bf-p4c's output ---------------------------------------------------------

def _find_conf(path: str) -> Optional[str]:
    if os.path.isfile(path) and path.endswith(".conf"):
        return path
    if os.path.isdir(path):
        confs = sorted(f for f in os.listdir(path) if f.endswith(".conf"))
        if len(confs) == 1:
            return os.path.join(path, confs[0])
        if len(confs) > 1:
            raise PipelineMismatch(f"{path} holds several .conf files ({', '.join(confs)}): "
                                   "name the one to pack")
    return None


def _resolve(p: str, conf_dir: str, *fallback: str) -> str:
    """A path the .conf names: as written (absolute, or relative to the
    folder bf-p4c ran in), else relative to the .conf's folder, else the
    layout bf-p4c writes (the folder may have been moved or copied)."""
    cands = [p, os.path.join(conf_dir, p)] if p else []
    cands.append(os.path.join(conf_dir, *fallback))
    for c in cands:
        if c and os.path.isfile(c):
            return c
    raise PipelineMismatch(f"bf-p4c output incomplete: {p or os.path.join(*fallback)} not found "
                           f"(looked beside {conf_dir}); compile with `make p4-tna`")


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def pack_bfp4c_output(path: str) -> BfPipelineConfig:
    """BfPipelineConfig from bf-p4c's output folder (or its .conf), the
    way Stratum's bf_pipeline_builder assembles it."""
    conf_path = _find_conf(path)
    if conf_path is None:
        raise PipelineMismatch(f"no bf-p4c output at {path}: expected a folder with the "
                               "<program>.conf bf-p4c writes (make p4-tna)")
    conf_dir = os.path.dirname(os.path.abspath(conf_path))
    try:
        conf = json.loads(_read(conf_path))
        devices = conf["p4_devices"]
        if len(devices) != 1:
            raise PipelineMismatch(f"{conf_path}: Stratum takes one device, the .conf has "
                                   f"{len(devices)}")
        programs = devices[0]["p4_programs"]
        if len(programs) != 1:
            raise PipelineMismatch(f"{conf_path}: BfPipelineConfig holds one program, the "
                                   f".conf has {len(programs)}")
        prog = programs[0]
        cfg = BfPipelineConfig(
            p4_name=prog["program-name"],
            bfruntime_info=_read(_resolve(prog.get("bfrt-config", ""), conf_dir, "bf-rt.json")))
        for pipe in prog["p4_pipelines"]:
            name = pipe["p4_pipeline_name"]
            binary = pipe.get("config", "")
            cfg.profiles.append(Profile(
                profile_name=name,
                context=_read(_resolve(pipe.get("context", ""), conf_dir, name, "context.json")),
                binary=_read(_resolve(binary, conf_dir, name,
                                      os.path.basename(binary) or "tofino.bin")),
                pipe_scope=[int(s) for s in pipe.get("pipe_scope", [])]))
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise PipelineMismatch(f"{conf_path} is not a bf-p4c .conf: {type(e).__name__} {e}") \
            from None
    if not cfg.profiles:
        raise PipelineMismatch(f"{conf_path} lists no P4 pipeline")
    return cfg


def device_config(path: str) -> bytes:
    """The p4_device_config for Stratum: a serialized BfPipelineConfig
    (.pb.bin, as bf_pipeline_builder writes, used as it is) or bf-p4c's
    output folder / .conf (packed here)."""
    if os.path.isfile(path) and not path.endswith(".conf"):
        data = _read(path)
        try:
            cfg = BfPipelineConfig.decode(data)
        except PipelineMismatch:
            cfg = None
        if cfg is None or not cfg.p4_name or not cfg.profiles:
            raise PipelineMismatch(f"{path} is not a BfPipelineConfig (Stratum's Tofino device "
                                   "config): give bf-p4c's output folder or its .conf instead")
        return data
    return pack_bfp4c_output(path).encode()


def unpack(data: bytes, outdir: str) -> Dict[str, str]:
    """Writes the files back as bf_pipeline_builder -unpack_dir does:
    <outdir>/<p4_name>/bfrt.json and <p4_name>/<profile>/{context.json,
    tofino.bin}. Returns what was written."""
    cfg = BfPipelineConfig.decode(data)
    base = os.path.join(outdir, cfg.p4_name)
    os.makedirs(base, exist_ok=True)
    written = {}

    def put(rel, blob):
        p = os.path.join(base, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(blob)
        written[rel] = p

    put("bfrt.json", cfg.bfruntime_info)
    for prof in cfg.profiles:
        put(os.path.join(prof.profile_name, "context.json"), prof.context)
        put(os.path.join(prof.profile_name, "tofino.bin"), prof.binary)
    return written
