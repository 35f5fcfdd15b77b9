//! Which resources a guest's import names, for what `compose` may leave
//! to the host: not one the virtual filesystem defines, which no host can
//! hand it.

use std::collections::HashSet;

use wac_graph::types::{
    DefinedType, DefinedTypeId, FuncTypeId, InterfaceId, ItemKind, ResourceId, Type, Types, ValueType,
};

/// The resources an item names (and those they alias), through its
/// functions, instances and value types, each type visited once.
pub(super) fn resources(types: &Types, item: &ItemKind) -> HashSet<ResourceId> {
    let mut walk = Walk { types, seen: HashSet::new(), found: Vec::new() };
    walk.item(item);
    let mut out = HashSet::new();
    for r in walk.found {
        let mut r = Some(r);
        while let Some(at) = r.filter(|at| out.insert(*at)) {
            r = types[at].alias.as_ref().map(|a| a.source);
        }
    }
    out
}

/// The resources an imported interface defines itself (not those it
/// takes from another interface).
pub(super) fn defined_resources(types: &Types, item: &ItemKind) -> HashSet<ResourceId> {
    let ItemKind::Instance(i) = item else { return HashSet::new() };
    let resources = types[*i].exports.values().filter_map(|e| match e {
        ItemKind::Type(Type::Resource(r)) if types[*r].alias.is_none() => Some(*r),
        _ => None,
    });
    resources.collect()
}

/// A walk over an item's types, collecting each resource it meets.
struct Walk<'a> {
    types: &'a Types,
    seen: HashSet<Seen>,
    found: Vec<ResourceId>,
}

#[derive(PartialEq, Eq, Hash)]
enum Seen {
    Interface(InterfaceId),
    Defined(DefinedTypeId),
}

impl Walk<'_> {
    fn item(&mut self, item: &ItemKind) {
        match item {
            ItemKind::Type(t) => self.ty(t),
            ItemKind::Func(f) => self.func(*f),
            ItemKind::Instance(i) => self.interface(*i),
            ItemKind::Value(v) => self.value(v),
            ItemKind::Component(_) | ItemKind::Module(_) => {}
        }
    }

    fn ty(&mut self, t: &Type) {
        match t {
            Type::Resource(r) => self.found.push(*r),
            Type::Func(f) => self.func(*f),
            Type::Value(v) => self.value(v),
            Type::Interface(i) => self.interface(*i),
            Type::World(_) | Type::Module(_) => {}
        }
    }

    fn interface(&mut self, i: InterfaceId) {
        if self.seen.insert(Seen::Interface(i)) {
            let types = self.types;
            types[i].exports.values().for_each(|item| self.item(item));
        }
    }

    fn func(&mut self, f: FuncTypeId) {
        let types = self.types;
        types[f].params.values().chain(&types[f].result).for_each(|v| self.value(v));
    }

    fn value(&mut self, v: &ValueType) {
        let d = match v {
            ValueType::Primitive(_) => return,
            ValueType::Own(r) | ValueType::Borrow(r) => return self.found.push(*r),
            ValueType::Defined(d) => *d,
        };
        if !self.seen.insert(Seen::Defined(d)) {
            return;
        }
        let types = self.types;
        match &types[d] {
            DefinedType::Tuple(vs) => vs.iter().for_each(|v| self.value(v)),
            DefinedType::List(v) | DefinedType::FixedSizeList(v, _) | DefinedType::Alias(v) => self.value(v),
            DefinedType::Option(v) => self.value(v),
            DefinedType::Map(k, v) => {
                self.value(k);
                self.value(v);
            }
            DefinedType::Result { ok, err } => ok.iter().chain(err).for_each(|v| self.value(v)),
            DefinedType::Variant(variant) => variant.cases.values().flatten().for_each(|v| self.value(v)),
            DefinedType::Record(record) => record.fields.values().for_each(|v| self.value(v)),
            DefinedType::Stream(v) | DefinedType::Future(v) => v.iter().for_each(|v| self.value(v)),
            DefinedType::Flags(_) | DefinedType::Enum(_) => {}
        }
    }
}
