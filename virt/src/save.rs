//! `packfs:virt/control.save`: the namespace written as a pack to a host
//! file after the guest's run (`packfs virt --save`).

use crate::Virt;
use crate::bindings::exports::packfs::virt::control;

impl control::Guest for Virt {
    fn save() -> Result<(), String> {
        Err("not yet".into())
    }
}
