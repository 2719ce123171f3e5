#!/usr/bin/env python3
"""NCCL_TUNER_PLUGIN=autoccl and NCCL_PROFILER_PLUGIN=autoccl: NCCL dlopens
libnccl-tuner-<NAME>.so and libnccl-profiler-<NAME>.so from the library
path (src/plugin/plugin_open.cc). Both names must load from the build folder,
export their ABI symbols, and be one library in the process (one copy of the
plugin's state, as with a path given to both variables).

usage: short_names.py PLUGIN
"""
import ctypes
import os
import subprocess
import sys

if len(sys.argv) == 3 and sys.argv[1] == "--child":
    # Run with LD_LIBRARY_PATH set: dlopen reads it at process start.
    libs = {}
    for kind, sym in (("tuner", "ncclTunerPlugin_v5"), ("profiler", "ncclProfiler_v5")):
        name = "libnccl-%s-%s.so" % (kind, sys.argv[2])
        try:
            lib = ctypes.CDLL(name, mode=ctypes.RTLD_LOCAL)
        except OSError as e:
            print("FAIL: %s does not load: %s" % (name, e))
            sys.exit(1)
        try:
            libs[kind] = ctypes.cast(getattr(lib, sym), ctypes.c_void_p).value
            libs[kind + "-other"] = ctypes.cast(
                getattr(lib, "ncclProfiler_v5" if kind == "tuner" else "ncclTunerPlugin_v5"),
                ctypes.c_void_p).value
        except AttributeError as e:
            print("FAIL: %s lacks %s" % (name, e))
            sys.exit(1)
    if libs["tuner"] != libs["profiler-other"] or libs["profiler"] != libs["tuner-other"]:
        print("FAIL: the two names load two copies of the plugin: %s" % libs)
        sys.exit(1)
    print("PASS: libnccl-tuner-%s.so and libnccl-profiler-%s.so are one library" %
          (sys.argv[2], sys.argv[2]))
    sys.exit(0)

plugin = os.path.abspath(sys.argv[1])
base = os.path.basename(plugin)
name = base[len("libnccl-tuner-"):-len(".so")]
other = os.path.join(os.path.dirname(plugin), "libnccl-profiler-%s.so" % name)
# A sanitizer build cannot be loaded into this (uninstrumented) Python: there
# the name is checked to be the same file, which is what makes it one library.
needed = subprocess.run(["readelf", "-d", plugin], capture_output=True, text=True).stdout
if "libasan" in needed or "libtsan" in needed or "libubsan" in needed:
    if not os.path.exists(other) or not os.path.samefile(plugin, other):
        print("FAIL: %s is not %s" % (other, plugin))
        sys.exit(1)
    print("PASS: %s is the plugin (a sanitizer build: not loaded here)" % other)
    sys.exit(0)
env = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(plugin))
sys.exit(subprocess.call([sys.executable, os.path.abspath(__file__), "--child", name], env=env,
                         cwd="/"))
