#include "crcrd/select/glob.hpp"

#include <algorithm>
#include <bitset>
#include <cstdint>
#include <cstring>
#include <map>
#include <tuple>

namespace crcrd::select {

// The globs form a trie of segments: a node is a sequence of glob segments read so far, an edge
// one glob segment. A path is matched by keeping the set of nodes its segments so far lead to
// (an NFA over segments, at most a few nodes for real rules): a literal edge is one hash lookup
// for all the globs at once, a wildcard edge is looked up by its literal prefix or suffix and
// only then compared, and a `**` node keeps itself for any segment. No state is built while
// matching, so the first path costs what the others do and threads share nothing but reads.

namespace {

enum Kind : std::uint8_t { k_literal, k_prefix, k_suffix };

/// A hash of the bytes, eight at a time, good enough for the short keys of a table built from
/// trusted rules (lookups compare the key bytes anyway).
std::uint64_t hash_bytes(std::string_view s) {
    std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ s.size();
    std::size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
        std::uint64_t w;
        std::memcpy(&w, s.data() + i, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 29;
    }
    std::uint64_t w = 0;
    for (std::size_t k = 0; i + k < s.size(); ++k)
        w |= std::uint64_t{static_cast<unsigned char>(s[i + k])} << (8 * k);
    h = (h ^ w) * 0x94d049bb133111ebULL;
    return h ^ (h >> 32);
}

/// A path segment, with its hash computed at most once and only if a literal edge is looked up.
struct Segment {
    std::string_view text;
    std::uint64_t hash = 0;
    bool hashed = false;

    std::uint64_t get_hash() {
        if (!hashed) hash = hash_bytes(text), hashed = true;
        return hash;
    }
};

std::uint64_t entry_hash(std::uint64_t bytes, std::uint32_t node, Kind kind) {
    std::uint64_t x = bytes + (std::uint64_t{node} * 4 + kind + 1) * 0x9e3779b97f4a7c15ULL;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ULL;
    return x ^ (x >> 29);
}

/// Whether `piece` and `text`, of equal size, agree byte for byte, `?` standing for any byte.
bool agrees(std::string_view piece, std::string_view text) {
    for (std::size_t i = 0; i < piece.size(); ++i)
        if (piece[i] != '?' && piece[i] != text[i]) return false;
    return true;
}

/// One path segment against a glob segment whose runs of `*` are single: the pieces between
/// the stars are fixed-length, so the first and last are anchored and each middle one is
/// taken at its leftmost place, which leaves the most room to the rest.
bool match_wild(std::string_view pattern, std::string_view text) {
    const std::size_t first = pattern.find('*');
    if (first == std::string_view::npos)
        return pattern.size() == text.size() && agrees(pattern, text);
    const std::size_t last = pattern.rfind('*');
    const std::string_view head = pattern.substr(0, first), tail = pattern.substr(last + 1);
    if (text.size() < head.size() + tail.size()) return false;
    if (!agrees(head, text.substr(0, head.size())) ||
        !agrees(tail, text.substr(text.size() - tail.size())))
        return false;
    std::string_view rest = text.substr(head.size(), text.size() - head.size() - tail.size());
    for (std::size_t start = first + 1; start < last;) {
        const std::size_t star = pattern.find('*', start);
        const std::string_view piece = pattern.substr(start, star - start);
        std::size_t at = 0;
        while (at + piece.size() <= rest.size() && !agrees(piece, rest.substr(at, piece.size())))
            ++at;
        if (at + piece.size() > rest.size()) return false;
        rest.remove_prefix(at + piece.size());
        start = star + 1;
    }
    return true;
}

/// A glob segment with every run of `*` made one `*`.
std::string single_stars(std::string_view seg) {
    std::string out;
    for (char c : seg)
        if (c != '*' || out.empty() || out.back() != '*') out += c;
    return out;
}

/// The trie's edges as compile collects them, grouped by the key they are looked up by.
struct TrieEdges {
    std::map<std::pair<int, std::string>, int> children;  // a literal has no `*` or `?`
    std::map<std::tuple<int, Kind, std::string>, std::vector<std::pair<std::string, int>>> keyed;
    std::map<int, std::vector<std::pair<std::string, int>>> loose;
};

}  // namespace

struct GlobSet::Compiled {
    struct Node {
        int globstar = -1;      // the node after a `**` segment; in a set with this node
        bool loops = false;     // a `**` node: stays in the set whatever the segment
        bool literals = false;  // has literal edges
        std::uint32_t loose_begin = 0, loose_end = 0;  // wildcard edges with no literal end
        std::vector<std::uint32_t> prefix_sizes, suffix_sizes;  // of its indexed wildcard edges
        std::bitset<256> prefix_first, suffix_last;             // their first or last bytes
        std::vector<int> ids;                                   // the globs that end here
    };
    struct Edge {
        std::uint32_t pattern_at = 0, pattern_size = 0;  // in `bytes`; none for a literal edge
        int to = 0;
        bool wild = false;
    };
    struct Entry {  // (node, kind, key) -> edges [first, last)
        std::uint64_t hash = 0;
        std::uint32_t node = UINT32_MAX;  // UINT32_MAX: an empty slot
        Kind kind = k_literal;
        std::uint32_t key_at = 0, key_size = 0, first = 0, last = 0;
    };

    std::size_t globs = 0;
    std::vector<Node> nodes;
    std::vector<Edge> edges;
    std::vector<Entry> table;  // open addressing, a power of two at most half full
    std::string bytes;         // the keys and the wildcard patterns

    std::string_view at(std::uint32_t offset, std::uint32_t size) const {
        return std::string_view(bytes).substr(offset, size);
    }

    const Entry* find(std::uint32_t node, Kind kind, std::string_view key,
                      std::uint64_t key_hash) const {
        const std::uint64_t h = entry_hash(key_hash, node, kind);
        for (std::size_t i = h & (table.size() - 1);; i = (i + 1) & (table.size() - 1)) {
            const Entry& e = table[i];
            if (e.node == UINT32_MAX) return nullptr;
            if (e.hash == h && e.node == node && e.kind == kind && at(e.key_at, e.key_size) == key)
                return &e;
        }
    }

    /// Adds to `set` the nodes `seg` leads to from node `n`, each with its `**` node.
    void step(std::uint32_t n, Segment& segment, std::vector<int>& set) const {
        const Node& node = nodes[n];
        const std::string_view seg = segment.text;
        const auto enter = [&](int to) {
            set.push_back(to);
            if (nodes[static_cast<std::size_t>(to)].globstar >= 0)
                set.push_back(nodes[static_cast<std::size_t>(to)].globstar);
        };
        const auto try_edges = [&](std::uint32_t first, std::uint32_t last) {
            for (std::uint32_t e = first; e < last; ++e)
                if (!edges[e].wild ||
                    match_wild(at(edges[e].pattern_at, edges[e].pattern_size), seg))
                    enter(edges[e].to);
        };
        if (node.loops) set.push_back(static_cast<int>(n));
        if (node.literals)
            if (const Entry* e = find(n, k_literal, seg, segment.get_hash()))
                try_edges(e->first, e->last);
        if (!seg.empty() && node.prefix_first[static_cast<unsigned char>(seg.front())]) {
            for (std::uint32_t size : node.prefix_sizes) {
                if (size > seg.size()) continue;
                const std::string_view key = seg.substr(0, size);
                if (const Entry* e = find(n, k_prefix, key, hash_bytes(key)))
                    try_edges(e->first, e->last);
            }
        }
        if (!seg.empty() && node.suffix_last[static_cast<unsigned char>(seg.back())]) {
            for (std::uint32_t size : node.suffix_sizes) {
                if (size > seg.size()) continue;
                const std::string_view key = seg.substr(seg.size() - size);
                if (const Entry* e = find(n, k_suffix, key, hash_bytes(key)))
                    try_edges(e->first, e->last);
            }
        }
        try_edges(node.loose_begin, node.loose_end);
    }

    int new_node() {
        nodes.emplace_back();
        return static_cast<int>(nodes.size() - 1);
    }

    /// Walks (and grows) the trie along the segments of glob `id`; the node it ends at gets
    /// the id.
    void add_glob(std::string_view glob, std::size_t id, TrieEdges& trie) {
        int n = 0;
        for (std::size_t start = 0;;) {
            const std::size_t slash = std::min(glob.find('/', start), glob.size());
            const std::string_view seg = glob.substr(start, slash - start);
            if (seg == "**") {
                if (!nodes[static_cast<std::size_t>(n)].loops) {  // `**/**` is `**`
                    if (nodes[static_cast<std::size_t>(n)].globstar < 0) {
                        const int g = new_node();
                        nodes[static_cast<std::size_t>(g)].loops = true;
                        nodes[static_cast<std::size_t>(n)].globstar = g;
                    }
                    n = nodes[static_cast<std::size_t>(n)].globstar;
                }
            } else {
                const bool wild = seg.find_first_of("*?") != std::string_view::npos;
                std::string text = wild ? single_stars(seg) : std::string(seg);
                auto [it, added] = trie.children.try_emplace({n, text}, 0);
                if (added) {
                    it->second = new_node();
                    if (!wild) {
                        trie.keyed[{n, k_literal, text}].emplace_back("", it->second);
                    } else if (const std::size_t p = text.find_first_of("*?"); p > 0) {
                        trie.keyed[{n, k_prefix, text.substr(0, p)}].emplace_back(text, it->second);
                    } else if (const std::size_t s = text.find_last_of("*?") + 1; s < text.size()) {
                        trie.keyed[{n, k_suffix, text.substr(s)}].emplace_back(text, it->second);
                    } else {
                        trie.loose[n].emplace_back(text, it->second);
                    }
                }
                n = it->second;
            }
            if (slash == glob.size()) break;
            start = slash + 1;
        }
        nodes[static_cast<std::size_t>(n)].ids.push_back(static_cast<int>(id));
    }

    void add_edges(const std::vector<std::pair<std::string, int>>& list) {
        for (const auto& [pattern, to] : list) {
            Edge e;
            e.to = to;
            e.wild = !pattern.empty();
            e.pattern_at = static_cast<std::uint32_t>(bytes.size());
            e.pattern_size = static_cast<std::uint32_t>(pattern.size());
            bytes += pattern;
            edges.push_back(e);
        }
    }

    /// Lays out the keyed edges, each key with its run of edges, and notes on each node what
    /// its keys look like; returns the hash table's entries.
    std::vector<Entry> add_keyed(const decltype(TrieEdges::keyed)& keyed) {
        std::vector<Entry> entries;
        for (const auto& [key, list] : keyed) {
            const auto& [n, kind, text] = key;
            Node& node = nodes[static_cast<std::size_t>(n)];
            Entry e;
            e.node = static_cast<std::uint32_t>(n);
            e.kind = kind;
            e.hash = entry_hash(hash_bytes(text), e.node, kind);
            e.key_at = static_cast<std::uint32_t>(bytes.size());
            e.key_size = static_cast<std::uint32_t>(text.size());
            bytes += text;
            e.first = static_cast<std::uint32_t>(edges.size());
            add_edges(list);
            e.last = static_cast<std::uint32_t>(edges.size());
            entries.push_back(e);
            auto& sizes = kind == k_prefix ? node.prefix_sizes : node.suffix_sizes;
            if (kind == k_literal) {
                node.literals = true;
            } else if (std::find(sizes.begin(), sizes.end(), e.key_size) == sizes.end()) {
                sizes.push_back(e.key_size);
            }
            if (kind == k_prefix) node.prefix_first.set(static_cast<unsigned char>(text.front()));
            if (kind == k_suffix) node.suffix_last.set(static_cast<unsigned char>(text.back()));
        }
        return entries;
    }

    void add_loose(const decltype(TrieEdges::loose)& loose) {
        for (const auto& [n, list] : loose) {
            Node& node = nodes[static_cast<std::size_t>(n)];
            node.loose_begin = static_cast<std::uint32_t>(edges.size());
            add_edges(list);
            node.loose_end = static_cast<std::uint32_t>(edges.size());
        }
    }

    void fill_table(const std::vector<Entry>& entries) {
        std::size_t slots = 16;
        while (slots < 2 * entries.size()) slots *= 2;
        table.resize(slots);
        for (const auto& e : entries) {
            std::size_t i = e.hash & (slots - 1);
            while (table[i].node != UINT32_MAX) i = (i + 1) & (slots - 1);
            table[i] = e;
        }
    }
};

GlobSet GlobSet::compile(const std::vector<std::string>& globs) {
    auto c = std::make_shared<Compiled>();
    c->globs = globs.size();
    c->nodes.emplace_back();
    // The trie, and its edges grouped by the key they are looked up by.
    TrieEdges trie;
    for (std::size_t id = 0; id < globs.size(); ++id) c->add_glob(globs[id], id, trie);
    const std::vector<Compiled::Entry> entries = c->add_keyed(trie.keyed);
    c->add_loose(trie.loose);
    c->fill_table(entries);
    GlobSet s;
    s.m_compiled = std::move(c);
    return s;
}

void GlobSet::match(std::string_view path, std::vector<int>& ids) const {
    ids.clear();
    if (!m_compiled || m_compiled->globs == 0) return;
    const Compiled& c = *m_compiled;
    thread_local std::vector<int> set, next;
    set.assign(1, 0);
    if (c.nodes[0].globstar >= 0) set.push_back(c.nodes[0].globstar);
    for (std::size_t start = 0;;) {
        const std::size_t slash = std::min(path.find('/', start), path.size());
        Segment seg{path.substr(start, slash - start)};
        next.clear();
        for (int n : set) c.step(static_cast<std::uint32_t>(n), seg, next);
        if (next.size() > 8) {
            std::sort(next.begin(), next.end());
            next.erase(std::unique(next.begin(), next.end()), next.end());
        } else {
            std::size_t kept = 0;  // the few nodes of real rules: drop repeats in place
            for (std::size_t i = 0; i < next.size(); ++i)
                if (std::find(next.begin(), next.begin() + static_cast<std::ptrdiff_t>(kept),
                              next[i]) == next.begin() + static_cast<std::ptrdiff_t>(kept))
                    next[kept++] = next[i];
            next.resize(kept);
        }
        set.swap(next);
        if (set.empty()) return;
        if (slash == path.size()) break;
        start = slash + 1;
    }
    for (int n : set) {
        const auto& here = c.nodes[static_cast<std::size_t>(n)].ids;
        ids.insert(ids.end(), here.begin(), here.end());
    }
    std::sort(ids.begin(), ids.end());
}

std::size_t GlobSet::size() const {
    return m_compiled ? m_compiled->globs : 0;
}

}  // namespace crcrd::select
