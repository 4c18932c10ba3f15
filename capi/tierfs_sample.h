/* tierfs_sample.h — neighbor sampling and link sampling: one sampler and one sample for a graph
 * of one type and of several (the types as in tierfs_store.h; NULL or "" for a type argument
 * means the only type, and is TFS_EINVAL naming the types when there are several).
 * Part of the C ABI of tierfs: include tierfs.h (which includes this header and its
 * siblings), whose Conventions block holds for every call here. */
#ifndef TIERFS_SAMPLE_H
#define TIERFS_SAMPLE_H

#include "tierfs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* options_json: {"fanouts": [per hop, -1 = every neighbor] (the only edge type) or
 * {"src:rel:dst": [per hop], ... every edge type, one length}, "replace": false (with
 * replacement), "seed": 0, "workers": 0 (0: one per CPU), "weight": "" (an edge feature of one
 * value an edge: the edge types that have it draw neighbors in proportion to it, on the host, as
 * PyG's weight_attr), "disjoint": false (true: every seed its own tree, PyG's disjoint=True — a
 * node reached from two seeds is a node of each, of every node type — on the host; from edges:
 * tfs_sample_from_edges_at; tfs_sample_batch reads each node's seed index), "time": "" (a node or edge feature of one integer
 * a row, PyG's time_attr: samples in time, disjoint — a tree draws only neighbors whose node time,
 * or whose edge's time, is at most its seed's time, in time order; an edge type without the feature
 * on its edges or its source type draws as without time — with disjoint's limits and no weight;
 * tfs_sample_at gives the seed times), "temporal_strategy":
 * "uniform" (or "last": a node's fanout latest qualifying neighbors)}. The k-th successful sample (of nodes or of edges) draws with seed + k, so
 * batches differ but runs repeat. A graph of one type is sampled as a homogeneous graph (on the
 * GPU with gpu_topology), with the same draws. */
tfs_status tfs_sampler_create(tfs_store *store, const char *options_json, tfs_sampler **out);
tfs_status tfs_sampler_free(tfs_sampler *sampler);

/* Samples the k-hop in-neighborhood of the n seeds, ids of seed_type. Per node type, nodes are
 * the seeds first (seed type, exactly as given), then each hop's new nodes; per edge type, edges
 * (row: src-type local id = the neighbor -> col: dst-type local id = the node it was sampled
 * for) hop after hop. */
tfs_status tfs_sample(tfs_sampler *sampler, const char *seed_type, const int64_t *seeds, int64_t n,
                      struct tfs_sample **out);
/* tfs_sample at seed_times (n, one a seed: PyG's seed_time, seed i's tree draws neighbors of time
 * at most seed_times[i]) for a sampler with "time"; NULL is tfs_sample (a node-level time's seeds
 * at their own times; an edge-level time needs seed times: TFS_EINVAL). Seed times for a sampler
 * without "time" are TFS_EINVAL. */
tfs_status tfs_sample_at(tfs_sampler *sampler, const char *seed_type, const int64_t *seeds, const int64_t *seed_times,
                         int64_t n, struct tfs_sample **out);
/* {"nodes_per_hop": {node type: [seeds, hop 1, ...]}, "edges_per_hop": {edge type: [hop 1, ...]},
 * "edge_ids": {edge type: true when it has edge ids}, "disjoint": true for a disjoint sampler's
 * sample}: the sizes of the arrays below, every type of the dataset. */
tfs_status tfs_sample_json(struct tfs_sample *sample, char *buf, size_t cap, size_t *needed);
/* Copies node_type's sampled node ids (the sum of its nodes_per_hop). */
tfs_status tfs_sample_nodes(struct tfs_sample *sample, const char *node_type, int64_t *out);
/* Copies a disjoint sample's seed index (position in the seeds) of each of node_type's sampled
 * nodes, as tfs_sample_nodes lays them out (PyG's batch); TFS_ENOENT for a sample that is not
 * disjoint. */
tfs_status tfs_sample_batch(struct tfs_sample *sample, const char *node_type, int64_t *out);
/* Copies edge_type's sampled edges (the sum of its edges_per_hop); edge_ids (may be NULL): edge
 * i's position in the edge type's CSC, the row of its edge features (tfs_gather_edge_feature). */
tfs_status tfs_sample_edges(struct tfs_sample *sample, const char *edge_type, int64_t *row, int64_t *col,
                            int64_t *edge_ids);
tfs_status tfs_sample_free(struct tfs_sample *sample);

/* Link sampling (docs: ARCHITECTURE.md "Link sampling"; PyG's edge_sample, disjoint=False; a
 * disjoint sampler's: see tfs_sample_from_edges_at):
 * samples around the n seed edges (src[i], dst[i]) of edge_type — src ids of its src node type,
 * dst ids of its dst node type — with the sampler's fanouts and next seed. labels (NULL: none;
 * not with triplet) holds one label a seed edge. link_options_json (NULL or "": no negatives)
 * holds the link options of tfs_options_json("link"), a key left out at its default:
 * {"neg_sampling": "binary" | "triplet" | null, "amount": 1 (binary: negative pairs per seed edge,
 * ceil(amount * n) in all; triplet: a whole number of negative destinations per seed edge),
 * "strict": false (redraw negatives that are edges), "exclude_seed_edges": false (leave the seed
 * edges out of the neighborhoods) and, with exclude_seed_edges, where their reverses are to be
 * left out too: "undirected": false (in the seed edge type itself, one within one node type) or
 * "reverse_edge_types": {"src:rel:dst": "dst:rev:src"} (in that edge type)}. Negatives are nodes
 * of the edge type's node types. The seeds of each node type are the distinct endpoints of that
 * type, ascending; tfs_sample_json, _nodes and _edges read the sample, tfs_sample_link_* its label
 * edges. TFS_ENOENT names an unknown edge type, TFS_ERANGE an endpoint outside its type,
 * TFS_EINVAL a bad option, an unknown or mistyped reverse edge type or labels of another length. */
tfs_status tfs_sample_from_edges(tfs_sampler *sampler, const char *edge_type, const int64_t *src, const int64_t *dst,
                                 const int64_t *labels, int64_t n, const char *link_options_json,
                                 struct tfs_sample **out);
/* tfs_sample_from_edges at edge_label_time (n, one a seed edge: PyG's edge_label_time, both
 * endpoints' trees and their negatives' draw neighbors of time at most the seed edge's; with a
 * node-level time, negatives are nodes of time at most it, else the earliest node) for a sampler
 * with "time", which needs them (NULL: TFS_EINVAL); NULL is tfs_sample_from_edges for a sampler
 * without. A disjoint or temporal sampler's sample is PyG's disjoint layout (edge_sample with
 * disjoint=True): every endpoint of a seed edge and negative is the seed of its own tree, of
 * the src type the sources then the binary negatives' sources, of the dst type the destinations
 * then the negative destinations (triplet negative j of seed edge i at j * n + i; one node type:
 * the sources, then the destinations); tfs_sample_batch gives each node's tree index mod n, the
 * label index those seeds' positions. Not with "strict" negatives in node time. */
tfs_status tfs_sample_from_edges_at(tfs_sampler *sampler, const char *edge_type, const int64_t *src, const int64_t *dst,
                                    const int64_t *labels, const int64_t *edge_label_time, int64_t n,
                                    const char *link_options_json, struct tfs_sample **out);
/* {"edge_label_index": m, "edge_label": m or 0, "src_index": n, "dst_pos_index": n,
 * "dst_neg_index": n * amount, "triplet": bool}: the lengths of the arrays below (binary and no
 * negatives fill edge_label_index and edge_label, triplet the other three). TFS_ENOENT for a
 * sample drawn from nodes. */
tfs_status tfs_sample_link_json(struct tfs_sample *sample, char *buf, size_t cap, size_t *needed);
/* Copies the label edges (any pointer may be NULL), sources as local ids of the edge type's src
 * type, destinations of its dst type: edge_label_index (2 * m: the m sources, then the m
 * destinations; seed edges in input order, then the negative pairs), edge_label (the labels or
 * 1s, then a 0 a negative pair), src_index and dst_pos_index (seed edge i's endpoints),
 * dst_neg_index (seed edge i's negative destinations at [i * amount, (i + 1) * amount)). */
tfs_status tfs_sample_link_copy(struct tfs_sample *sample, int64_t *edge_label_index, int64_t *edge_label,
                                int64_t *src_index, int64_t *dst_pos_index, int64_t *dst_neg_index);

#ifdef __cplusplus
}
#endif

#endif /* TIERFS_SAMPLE_H */
