// Imported by `jco run --jco-import` before a component of `packfs virt`
// runs on jco's stock preview2-shim: the one host directory it may reach
// is $PACKFS_VIRT_OUT, at /out, where it saves its namespace.
import { _setPreopens } from "@bytecodealliance/preview2-shim/filesystem";

_setPreopens({ "/out": process.env.PACKFS_VIRT_OUT });
