//! What a damaged or hostile input makes of `packfs virt`.
