"""A child of the load benchmark (bench/benches/load): wasmtime-py compiles
or loads MODULE (with its cache in CACHE when given) and runs its _start
over preview1, a directory preopened at /.

    python load_py.py MODULE [CACHE]

Optional: the benchmark adds its rows when $LOAD_PY names a Python that
has `pip install wasmtime==50.0.1`.
"""

import os
import sys
import tempfile

from wasmtime import Config, Engine, Linker, Module, Store, WasiConfig

module_path = sys.argv[1]
config = Config()
if len(sys.argv) > 2:
    os.makedirs(sys.argv[2], exist_ok=True)
    toml = os.path.join(sys.argv[2], "config.toml")
    with open(toml, "w") as f:
        f.write('[cache]\ndirectory = "%s"\n' % os.path.join(sys.argv[2], "data"))
    config.cache = toml
engine = Engine(config)
module = Module.from_file(engine, module_path)
linker = Linker(engine)
linker.define_wasi()
store = Store(engine)
wasi = WasiConfig()
wasi.preopen_dir(tempfile.gettempdir(), "/")
store.set_wasi(wasi)
instance = linker.instantiate(store, module)
instance.exports(store)["_start"](store)
