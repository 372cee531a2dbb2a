//! The order in which a Java `java.util.HashMap<String, _>` iterates its keys, for `--compat
//! stepfunctions-local`: Step Functions Local (a Java program) builds a `Parameters` or
//! `ResultSelector` object's `.$` members in such a map (see `template::Template::
//! in_step_functions_local_order`).
//!
//! The rule comes from the JDK's specification, not from Step Functions Local's (closed)
//! source: a key's bucket is `(n - 1) & (h ^ (h >>> 16))` where `h` is `String.hashCode`
//! (`s[0]·31^(k-1) + … + s[k-1]` over UTF-16 code units, wrapping) and `n` the table size: 16
//! at first, doubled when the size exceeds three quarters of it, and doubled as well when a
//! bucket reaches 9 entries while the table is smaller than 64 (instead of turning the bucket
//! into a tree). Iteration walks the buckets in index order, each bucket's entries in the
//! order they were put (a resize splits a bucket keeping that order). A bucket turned into a
//! tree (9 colliding keys in a table of 64 or more) is walked in insertion order here, which
//! Java does not promise; no JSON seen in practice gets there.
//!
//! `tests/compat_sfl.rs` checks it against the JDK itself (`java`/`javac` when installed), and
//! against the JDK's committed answers otherwise.

/// Java's `String.hashCode`.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// `HashMap.hash`: the hash code with its high half folded into the low half.
fn spread(h: i32) -> u32 {
    let h = h as u32;
    h ^ (h >> 16)
}

/// The order in which a `HashMap<String, _>` built with `new HashMap<>()` and filled with
/// `keys` (distinct, in this order) iterates them: indices into `keys`.
pub fn hashmap_order<S: AsRef<str>>(keys: &[S]) -> Vec<usize> {
    const TREEIFY_THRESHOLD: usize = 8;
    const MIN_TREEIFY_CAPACITY: usize = 64;
    let hashes: Vec<u32> = keys
        .iter()
        .map(|k| spread(java_string_hash(k.as_ref())))
        .collect();
    let mut capacity = 16usize;
    let mut table: Vec<Vec<usize>> = vec![Vec::new(); capacity];
    let resize = |table: &mut Vec<Vec<usize>>, capacity: &mut usize| {
        let old = *capacity;
        *capacity = old * 2;
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); *capacity];
        for (j, bucket) in table.iter().enumerate() {
            for &i in bucket {
                // Entries keep their order: the low list stays at j, the high one moves to
                // j + old.
                let to = if hashes[i] as usize & old == 0 {
                    j
                } else {
                    j + old
                };
                next[to].push(i);
            }
        }
        *table = next;
    };
    for (i, &hash) in hashes.iter().enumerate() {
        let b = hash as usize & (capacity - 1);
        let before = table[b].len();
        table[b].push(i);
        // putVal: a chain that had TREEIFY_THRESHOLD entries gets treeified, or the table
        // resized while it is small.
        if before >= TREEIFY_THRESHOLD && capacity < MIN_TREEIFY_CAPACITY {
            resize(&mut table, &mut capacity);
        }
        // ++size > threshold (0.75 of the capacity).
        if i + 1 > capacity / 4 * 3 {
            resize(&mut table, &mut capacity);
        }
    }
    table.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_hash_codes_are_java_s() {
        // "Aa" and "BB" collide in Java (2112); "" hashes to 0.
        assert_eq!(java_string_hash("Aa"), 2112);
        assert_eq!(java_string_hash("BB"), 2112);
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("hello"), 99162322);
        // Wrapping: "polygenelubricants" hashes to i32::MIN.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
    }

    #[test]
    fn small_maps_iterate_by_bucket() {
        // "a".."e" hash to 97..101: buckets 1..5 of 16, whatever the insertion order.
        let keys = ["e", "c", "a", "d", "b"];
        let order: Vec<&str> = hashmap_order(&keys).iter().map(|&i| keys[i]).collect();
        assert_eq!(order, ["a", "b", "c", "d", "e"]);
        // Colliding keys keep their insertion order within the bucket.
        let keys = ["BB", "Aa"];
        let order: Vec<&str> = hashmap_order(&keys).iter().map(|&i| keys[i]).collect();
        assert_eq!(order, ["BB", "Aa"]);
    }
}
