//! A persistent ordered map: a treap (Seidel & Aragon, "Randomized Search
//! Trees", 1996) whose nodes are shared between versions through `Arc`.
//!
//! `clone` is O(1). An update copies only the nodes on its search path that
//! another version still shares (`Arc::make_mut`) — O(log n) expected — and
//! leaves every other version untouched, which is what makes a snapshot a
//! value. Rotations per update are O(1) expected, so an update allocates
//! about as many nodes as the tree is deep, never more.
//!
//! Priorities are random and never derived from keys, so a guest choosing
//! names cannot unbalance the tree: expected depth is O(log n) for every
//! sequence of operations. A caller may rank some entries above others
//! ([`Treap::insert_ranked`]; within a rank priorities stay random): the
//! in-memory filesystem ranks inodes by their numbers, which it hands out
//! itself, to balance its inode treap.

use std::cmp::Ordering;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

type Link<K, V> = Option<Arc<Node<K, V>>>;

#[derive(Clone)]
struct Node<K, V> {
    key: K,
    value: V,
    prio: u64,
    left: Link<K, V>,
    right: Link<K, V>,
}

/// A persistent ordered map with O(1) clone and O(log n) expected updates.
#[derive(Clone)]
pub struct Treap<K, V> {
    root: Link<K, V>,
    len: usize,
    rng: u64,
}

impl<K, V> Default for Treap<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V> std::fmt::Debug for Treap<K, V>
where
    K: std::fmt::Debug,
    V: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K, V> Treap<K, V> {
    /// An empty map, its priority sequence seeded from the process's hash
    /// randomness so that priorities cannot be predicted from outside.
    pub fn new() -> Self {
        let rng = std::collections::hash_map::RandomState::new().build_hasher().finish();
        Treap { root: None, len: 0, rng }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Levels from the root to the deepest node (for tests of balance).
    #[cfg(test)]
    pub(crate) fn height(&self) -> usize {
        fn depth<K, V>(link: &Link<K, V>) -> usize {
            link.as_ref().map_or(0, |n| 1 + depth(&n.left).max(depth(&n.right)))
        }
        depth(&self.root)
    }

    /// The entry for which `cmp(key)` is `Equal`. `cmp` orders a stored key
    /// against the target (`stored.cmp(target)`), so lookups need no owned key.
    pub fn get_with(&self, cmp: impl Fn(&K) -> Ordering) -> Option<(&K, &V)> {
        let mut link = &self.root;
        while let Some(node) = link {
            match cmp(&node.key) {
                Ordering::Equal => return Some((&node.key, &node.value)),
                Ordering::Less => link = &node.right,
                Ordering::Greater => link = &node.left,
            }
        }
        None
    }

    /// The greatest entry whose key satisfies `at_or_before`, a predicate
    /// that is true for a prefix of the key order.
    pub fn last_where(&self, at_or_before: impl Fn(&K) -> bool) -> Option<(&K, &V)> {
        let mut link = &self.root;
        let mut best = None;
        while let Some(node) = link {
            if at_or_before(&node.key) {
                best = Some((&node.key, &node.value));
                link = &node.right;
            } else {
                link = &node.left;
            }
        }
        best
    }

    /// The least entry whose key satisfies `in_range`, a predicate that is
    /// false for a prefix of the key order and true after it: the first
    /// entry [`iter_from`](Self::iter_from) would give, with no allocation.
    pub fn first_where(&self, in_range: impl Fn(&K) -> bool) -> Option<(&K, &V)> {
        let mut link = &self.root;
        let mut best = None;
        while let Some(node) = link {
            if in_range(&node.key) {
                best = Some((&node.key, &node.value));
                link = &node.left;
            } else {
                link = &node.right;
            }
        }
        best
    }

    /// All entries in key order.
    pub fn iter(&self) -> Iter<'_, K, V> {
        self.iter_from(|_| true)
    }

    /// Entries in key order, starting at the first key for which `in_range`
    /// holds; `in_range` must be false for a prefix of the key order and true
    /// after it (for example `|k| k >= start`).
    pub fn iter_from(&self, in_range: impl Fn(&K) -> bool) -> Iter<'_, K, V> {
        let mut stack = Vec::new();
        let mut link = &self.root;
        while let Some(node) = link {
            if in_range(&node.key) {
                stack.push(&**node);
                link = &node.left;
            } else {
                link = &node.right;
            }
        }
        Iter { stack }
    }

    /// A random priority below every one of a higher rank.
    fn ranked_prio(&mut self, rank: u8) -> u64 {
        (u64::from(rank) << 56) | (self.next_prio() >> 8)
    }

    fn next_prio(&mut self) -> u64 {
        // splitmix64: a full-period sequence with well-mixed output.
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl<K: Clone, V: Clone> Treap<K, V> {
    /// A mutable reference to the value for which `cmp` is `Equal`, copying
    /// the shared nodes on its path (one descent: a miss copies them too,
    /// which changes nothing but costs; look first where misses are common).
    pub fn get_mut_with(&mut self, cmp: impl Fn(&K) -> Ordering) -> Option<&mut V> {
        let mut link = &mut self.root;
        loop {
            let node = Arc::make_mut(link.as_mut()?);
            match cmp(&node.key) {
                Ordering::Equal => return Some(&mut node.value),
                Ordering::Less => link = &mut node.right,
                Ordering::Greater => link = &mut node.left,
            }
        }
    }

    /// Removes and returns the entry for which `cmp` is `Equal`, in one
    /// descent (as [`Self::get_mut_with`], a miss copies its path too).
    pub fn remove_with(&mut self, cmp: impl Fn(&K) -> Ordering) -> Option<(K, V)> {
        let removed = remove_at(&mut self.root, &cmp);
        if removed.is_some() {
            self.len -= 1;
        }
        removed
    }
}

impl<K: Ord + Clone, V: Clone> Treap<K, V> {
    /// Inserts `key -> value`, returning the value it replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        self.insert_ranked(key, value, 0)
    }

    /// Inserts `key -> value` with a priority rank: every entry of a higher
    /// rank sits above every entry of a lower one, so the few entries given
    /// a high rank are reached (and copied) in O(log of their number) steps.
    /// Within a rank priorities are random as usual. A new key takes `rank`;
    /// replacing a value keeps the key's place.
    pub fn insert_ranked(&mut self, key: K, value: V, rank: u8) -> Option<V> {
        let prio = self.ranked_prio(rank);
        let mut entry = Some((key, value));
        insert_at(&mut self.root, &mut entry, prio);
        let old = entry.map(|(_, v)| v);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    /// Appends entries whose keys ascend, each above every key here. They
    /// become a treap of their own in one pass, joined on by one merge down
    /// the right spine: O(m + log n) for m entries, where inserting them
    /// one at a time copies a path for each.
    pub fn append(&mut self, items: impl IntoIterator<Item = (K, V)>) {
        let mut spine: Vec<Node<K, V>> = Vec::new();
        let mut count = 0;
        for (key, value) in items {
            debug_assert!(spine.last().is_none_or(|n| n.key < key), "appended keys must ascend");
            count += 1;
            let prio = self.ranked_prio(0);
            // The right spine of the treap built so far, root first: the new
            // node (the greatest key yet) takes as its left subtree the part
            // of the spine it outranks.
            let mut below: Link<K, V> = None;
            while spine.last().is_some_and(|n| n.prio < prio) {
                let mut n = spine.pop().expect("checked above");
                n.right = below;
                below = Some(Arc::new(n));
            }
            spine.push(Node { key, value, prio, left: below, right: None });
        }
        let mut built: Link<K, V> = None;
        while let Some(mut n) = spine.pop() {
            n.right = built;
            built = Some(Arc::new(n));
        }
        debug_assert!(
            self.last_where(|_| true).zip(built.as_deref()).is_none_or(|((last, _), b)| *last < leftmost(b).key),
            "appended keys must come after every key here"
        );
        self.root = merge(self.root.take(), built);
        self.len += count;
    }

    /// The value stored under `key`.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.get_with(|k| k.cmp(key)).map(|(_, v)| v)
    }

    /// A mutable reference to the value under `key` (see [`Self::get_mut_with`]).
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.get_mut_with(|k| k.cmp(key))
    }

    /// Removes the entry under `key`, returning its value.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.remove_with(|k| k.cmp(key)).map(|(_, v)| v)
    }
}

/// Inserts the entry in `new` below `link`: a new node takes it (leaving
/// `None`); an existing key swaps values with it (leaving the old value).
/// Returns whether the node now at `link` is new or was rotated up: only
/// then can it outrank its parent, so the levels above a replacement or a
/// settled insertion skip the check. Nothing large travels up or down the
/// recursion by value.
fn insert_at<K: Ord + Clone, V: Clone>(link: &mut Link<K, V>, new: &mut Option<(K, V)>, prio: u64) -> bool {
    let Some(arc) = link else {
        let Some((key, value)) = new.take() else { return false };
        *link = Some(Arc::new(Node { key, value, prio, left: None, right: None }));
        return true;
    };
    let node = Arc::make_mut(arc);
    let Some((key, value)) = new.as_mut() else { return false };
    match (*key).cmp(&node.key) {
        Ordering::Equal => {
            std::mem::swap(&mut node.value, value);
            false
        }
        Ordering::Less => {
            let rotate = insert_at(&mut node.left, new, prio) && node.left.as_ref().is_some_and(|l| l.prio > node.prio);
            if rotate {
                rotate_right(link);
            }
            rotate
        }
        Ordering::Greater => {
            let rotate =
                insert_at(&mut node.right, new, prio) && node.right.as_ref().is_some_and(|r| r.prio > node.prio);
            if rotate {
                rotate_left(link);
            }
            rotate
        }
    }
}

// Both rotations run right after `insert_at` made the two nodes involved
// unique, so their `make_mut` calls never copy.
fn rotate_right<K: Clone, V: Clone>(link: &mut Link<K, V>) {
    let Some(mut top) = link.take() else { return };
    let top_mut = Arc::make_mut(&mut top);
    let Some(mut left) = top_mut.left.take() else {
        *link = Some(top);
        return;
    };
    let left_mut = Arc::make_mut(&mut left);
    top_mut.left = left_mut.right.take();
    left_mut.right = Some(top);
    *link = Some(left);
}

fn rotate_left<K: Clone, V: Clone>(link: &mut Link<K, V>) {
    let Some(mut top) = link.take() else { return };
    let top_mut = Arc::make_mut(&mut top);
    let Some(mut right) = top_mut.right.take() else {
        *link = Some(top);
        return;
    };
    let right_mut = Arc::make_mut(&mut right);
    top_mut.right = right_mut.left.take();
    right_mut.left = Some(top);
    *link = Some(right);
}

fn remove_at<K: Clone, V: Clone>(link: &mut Link<K, V>, cmp: &impl Fn(&K) -> Ordering) -> Option<(K, V)> {
    let ord = cmp(&link.as_ref()?.key);
    match ord {
        Ordering::Equal => {
            let node = Arc::unwrap_or_clone(link.take()?);
            *link = merge(node.left, node.right);
            Some((node.key, node.value))
        }
        Ordering::Less => remove_at(&mut Arc::make_mut(link.as_mut()?).right, cmp),
        Ordering::Greater => remove_at(&mut Arc::make_mut(link.as_mut()?).left, cmp),
    }
}

/// The node with the least key under `node`.
fn leftmost<K, V>(mut node: &Node<K, V>) -> &Node<K, V> {
    while let Some(left) = &node.left {
        node = left;
    }
    node
}

/// Joins two treaps where every key of `a` is below every key of `b`.
fn merge<K: Clone, V: Clone>(a: Link<K, V>, b: Link<K, V>) -> Link<K, V> {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(mut a), Some(mut b)) => {
            if a.prio > b.prio {
                let a_mut = Arc::make_mut(&mut a);
                a_mut.right = merge(a_mut.right.take(), Some(b));
                Some(a)
            } else {
                let b_mut = Arc::make_mut(&mut b);
                b_mut.left = merge(Some(a), b_mut.left.take());
                Some(b)
            }
        }
    }
}

/// In-order iterator over a [`Treap`].
pub struct Iter<'a, K, V> {
    stack: Vec<&'a Node<K, V>>,
}

impl<'a, K, V> Iterator for Iter<'a, K, V> {
    type Item = (&'a K, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        let node = self.stack.pop()?;
        let mut link = &node.right;
        while let Some(child) = link {
            self.stack.push(child);
            link = &child.left;
        }
        Some((&node.key, &node.value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn check_heap<K: Ord, V>(link: &Link<K, V>) {
        if let Some(n) = link {
            for child in [&n.left, &n.right].into_iter().flatten() {
                assert!(child.prio <= n.prio, "heap order broken");
            }
            check_heap(&n.left);
            check_heap(&n.right);
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u16, u32),
        Remove(u16),
        Get(u16),
        Mutate(u16, u32),
        RangeFrom(u16, u8),
        Floor(u16),
        Ceiling(u16),
        Snapshot,
        /// Keys above the greatest so far, `.0` apart.
        Append(Vec<(u16, u32)>),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Keys from a small space so that hits, replacements and removals are common.
        let key = 0u16..2048;
        prop_oneof![
            4 => (key.clone(), any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
            3 => key.clone().prop_map(Op::Remove),
            2 => key.clone().prop_map(Op::Get),
            1 => (key.clone(), any::<u32>()).prop_map(|(k, v)| Op::Mutate(k, v)),
            1 => (key.clone(), any::<u8>()).prop_map(|(k, n)| Op::RangeFrom(k, n)),
            1 => key.clone().prop_map(Op::Floor),
            1 => key.clone().prop_map(Op::Ceiling),
            1 => Just(Op::Snapshot),
            1 => proptest::collection::vec((1u16..20, any::<u32>()), 0..300).prop_map(Op::Append),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Long random sequences against `BTreeMap`; every snapshot taken
        /// along the way must still equal the model as it was then.
        #[test]
        fn matches_btreemap(ops in proptest::collection::vec(op(), 10_000..12_000)) {
            let mut t = Treap::new();
            let mut m = BTreeMap::new();
            let mut snaps = Vec::new();
            for op in ops {
                match op {
                    Op::Insert(k, v) => prop_assert_eq!(t.insert(k, v), m.insert(k, v)),
                    Op::Remove(k) => prop_assert_eq!(t.remove(&k), m.remove(&k)),
                    Op::Get(k) => prop_assert_eq!(t.get(&k), m.get(&k)),
                    Op::Mutate(k, v) => {
                        prop_assert_eq!(t.get_mut(&k).map(|x| { *x = v; *x }), m.get_mut(&k).map(|x| { *x = v; *x }));
                    }
                    Op::RangeFrom(k, n) => {
                        let got: Vec<_> = t.iter_from(|x| *x >= k).take(n as usize).collect();
                        let want: Vec<_> = m.range(k..).take(n as usize).collect();
                        prop_assert_eq!(got, want);
                    }
                    Op::Floor(k) => prop_assert_eq!(t.last_where(|x| *x <= k), m.range(..=k).next_back()),
                    Op::Ceiling(k) => prop_assert_eq!(t.first_where(|x| *x >= k), m.range(k..).next()),
                    Op::Snapshot => snaps.push((t.clone(), m.clone())),
                    Op::Append(gaps) => {
                        let mut k = m.last_key_value().map_or(0, |(&k, _)| k);
                        let mut items = Vec::new();
                        for (gap, v) in gaps {
                            k = k.saturating_add(gap);
                            if m.contains_key(&k) {
                                break; // the key space is used up
                            }
                            m.insert(k, v);
                            items.push((k, v));
                        }
                        t.append(items);
                        check_heap(&t.root);
                    }
                }
                prop_assert_eq!(t.len(), m.len());
            }
            prop_assert!(t.iter().eq(m.iter()));
            for (snap, model) in &snaps {
                prop_assert!(snap.iter().eq(model.iter()));
                prop_assert_eq!(snap.len(), model.len());
            }
            check_heap(&t.root);
        }
    }

    #[test]
    fn sorted_inserts_stay_shallow() {
        let mut t = Treap::new();
        for i in 0..100_000u32 {
            t.insert(i, ());
        }
        // Expected depth is ~2.99 ln n ≈ 34; 4x that is far beyond any
        // plausible random outcome yet far below a degenerate chain.
        let d = t.height();
        assert!(d < 140, "depth {d}");
        for i in (0..100_000u32).step_by(2) {
            t.remove(&i);
        }
        assert_eq!(t.len(), 50_000);
        assert!(t.iter().map(|(k, _)| *k).eq((1..100_000).step_by(2)));
    }

    #[test]
    fn ranked_entries_sit_above_the_rest() {
        let mut t = Treap::new();
        for i in 0..20_000u32 {
            t.insert_ranked(i, (), u8::from(i % 200 == 0));
        }
        check_heap(&t.root);
        // Every ancestor of a ranked entry is ranked, so a ranked entry's
        // depth is bounded by the depth of the 100-entry ranked treap.
        fn ranked_depths(link: &Link<u32, ()>, depth: usize, out: &mut Vec<usize>) {
            if let Some(n) = link
                && n.key % 200 == 0
            {
                out.push(depth);
                ranked_depths(&n.left, depth + 1, out);
                ranked_depths(&n.right, depth + 1, out);
            }
        }
        let mut depths = Vec::new();
        ranked_depths(&t.root, 1, &mut depths);
        assert_eq!(depths.len(), 100, "a ranked entry below an unranked one");
        assert!(depths.iter().all(|&d| d < 40), "{depths:?}");
        assert!(t.iter().map(|(k, _)| *k).eq(0..20_000));
    }

    #[test]
    fn update_copies_only_a_path() {
        let mut t = Treap::new();
        for i in 0..10_000u32 {
            t.insert(i, i);
        }
        let before = t.clone();
        *t.get_mut(&5000).unwrap() = 0;
        // Count nodes no longer shared with `before`.
        fn unshared<K, V>(a: &Link<K, V>, b: &Link<K, V>) -> usize {
            match (a, b) {
                (Some(x), Some(y)) if Arc::ptr_eq(x, y) => 0,
                (Some(x), Some(y)) => 1 + unshared(&x.left, &y.left) + unshared(&x.right, &y.right),
                (Some(_), None) | (None, Some(_)) => 1,
                (None, None) => 0,
            }
        }
        let copied = unshared(&t.root, &before.root);
        assert!(copied <= before.height(), "copied {copied} nodes");
        assert_eq!(before.get(&5000), Some(&5000));
        assert_eq!(t.get(&5000), Some(&0));
    }
}
