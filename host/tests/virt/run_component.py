# Runs a WASI 0.2 command component on wasmtime-py, as an embedder of it
# would: `python run_component.py COMPONENT OUT_DIR ARGV0 [ARGS...]`.
# Stdout and stderr are inherited; OUT_DIR is preopened at /out; exits
# with the component's status (0 for ok, 1 for err, the code it exits
# with).
import sys

import wasmtime
from wasmtime.component import Component, Linker

path, out_dir = sys.argv[1:3]
engine = wasmtime.Engine()
linker = Linker(engine)
linker.add_wasip2()
component = Component.from_file(engine, path)
store = wasmtime.Store(engine)
wasi = wasmtime.WasiConfig()
wasi.inherit_stdout()
wasi.inherit_stderr()
wasi.argv = sys.argv[3:]
wasi.preopen_dir(out_dir, "/out")
store.set_wasi(wasi)
instance = linker.instantiate(store, component)
run = None
for minor in range(20):
    iface = instance.get_export_index(store, f"wasi:cli/run@0.2.{minor}")
    if iface is not None:
        run = instance.get_func(store, instance.get_export_index(store, "run", iface))
        break
if run is None:
    sys.exit("no wasi:cli/run@0.2 export")
try:
    result = run(store)
except wasmtime.ExitTrap as e:
    sys.exit(e.code)
sys.exit(0 if result is None or result.tag == "ok" else 1)
