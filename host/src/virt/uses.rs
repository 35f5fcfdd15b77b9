//! What a component's import names of other interfaces: a composition
//! cannot leave as a host import an item whose types are an instance's
//! inside it (wac-graph panics on one), so `compose` refuses it first.

use std::collections::{BTreeSet, HashSet};

use wac_graph::types::{
    DefinedType, DefinedTypeId, FuncTypeId, InterfaceId, ItemKind, ResourceId, Type, Types, ValueType,
};

/// The interfaces (by name) and the resources an item names, through its
/// functions, resources and value types, each type visited once.
pub(super) struct Uses<'a> {
    types: &'a Types,
    pub(super) names: BTreeSet<String>,
    /// The resources it names (and those they alias).
    pub(super) resources: HashSet<ResourceId>,
    seen: HashSet<Seen>,
}

#[derive(PartialEq, Eq, Hash)]
enum Seen {
    Interface(InterfaceId),
    Defined(DefinedTypeId),
    Resource(ResourceId),
}

impl<'a> Uses<'a> {
    pub(super) fn new(types: &'a Types) -> Self {
        Uses { types, names: BTreeSet::new(), resources: HashSet::new(), seen: HashSet::new() }
    }

    pub(super) fn item(&mut self, item: &ItemKind) {
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
            Type::Resource(r) => self.resource(*r),
            Type::Func(f) => self.func(*f),
            Type::Value(v) => self.value(v),
            Type::Interface(i) => self.interface(*i),
            Type::World(_) | Type::Module(_) => {}
        }
    }

    fn name(&mut self, i: InterfaceId) {
        if let Some(id) = &self.types[i].id {
            self.names.insert(id.clone());
        }
    }

    fn interface(&mut self, i: InterfaceId) {
        if !self.seen.insert(Seen::Interface(i)) {
            return;
        }
        let types = self.types;
        for used in types[i].uses.values() {
            self.name(used.interface);
        }
        for item in types[i].exports.values() {
            self.item(item);
        }
    }

    fn func(&mut self, f: FuncTypeId) {
        let types = self.types;
        for v in types[f].params.values().chain(&types[f].result) {
            self.value(v);
        }
    }

    fn resource(&mut self, r: ResourceId) {
        if !self.seen.insert(Seen::Resource(r)) {
            return;
        }
        self.resources.insert(r);
        if let Some(alias) = &self.types[r].alias {
            if let Some(owner) = alias.owner {
                self.name(owner);
            }
            self.resource(alias.source);
        }
    }

    fn value(&mut self, v: &ValueType) {
        let d = match v {
            ValueType::Primitive(_) => return,
            ValueType::Borrow(r) | ValueType::Own(r) => return self.resource(*r),
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
