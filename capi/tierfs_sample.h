/* tierfs_sample.h — neighbor sampling and link sampling, of one type and of several.
 * Part of the C ABI of tierfs: include tierfs.h (which includes this header and its
 * siblings), whose Conventions block holds for every call here. */
#ifndef TIERFS_SAMPLE_H
#define TIERFS_SAMPLE_H

#include "tierfs.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tfs_sampler_options {
  size_t struct_size;
  const int32_t *fanouts; /* per hop; -1 takes every neighbor */
  int32_t num_hops;
  int32_t replace; /* nonzero: with replacement */
  uint64_t seed;   /* each call uses seed + call number, so batches differ but runs repeat */
  int32_t workers; /* 0: number of CPUs */
} tfs_sampler_options;

tfs_status tfs_sampler_create(tfs_store *store, const tfs_sampler_options *opts, tfs_sampler **out);
tfs_status tfs_sampler_free(tfs_sampler *sampler);

/* Samples the k-hop neighborhood of seeds. The sample's nodes are the seeds first, then the
 * nodes each hop reached; edges are (row = neighbor, col = node it was sampled for) in local ids. */
tfs_status tfs_sample(tfs_sampler *sampler, const int64_t *seeds, int64_t n, struct tfs_sample **out);
tfs_status tfs_sample_sizes(struct tfs_sample *sample, int64_t *num_nodes, int64_t *num_edges, int32_t *num_hops);
/* Copies the arrays out; each pointer may be NULL to skip it. Sizes: nodes num_nodes, row and col
 * num_edges, nodes_per_hop num_hops+1, edges_per_hop num_hops. */
tfs_status tfs_sample_copy(struct tfs_sample *sample, int64_t *nodes, int64_t *row, int64_t *col,
                           int64_t *nodes_per_hop, int64_t *edges_per_hop);
/* Copies the sample's edge ids (num_edges of them): edge i (row[i] -> col[i]) is the edge at that
 * position of the dataset's CSC, the row of its edge features (tfs_gather_edge_feature). */
tfs_status tfs_sample_edge_ids(struct tfs_sample *sample, int64_t *out);
tfs_status tfs_sample_free(struct tfs_sample *sample);

/* Link sampling (docs: ARCHITECTURE.md "Link sampling"; PyG's edge_sample, disjoint=False): samples
 * the k-hop neighborhood of the n seed edges (src[i], dst[i]) with the sampler's options, the
 * sampler's next seed (node and link samples count alike). labels (NULL: none; not with triplet)
 * holds one label a seed edge. link_options_json (NULL or "": no negatives) is
 * {"neg_sampling": "binary" | "triplet" | null, "amount": 1 (binary: negative pairs per seed edge,
 * ceil(amount * n) in all; triplet: a whole number of negative destinations per seed edge),
 * "strict": false (redraw negatives that are edges), "exclude_seed_edges": false (leave the seed
 * edges out of the neighborhoods), "undirected": false (with exclude_seed_edges, their reverses
 * too)}. The sample is a normal sample whose seeds are the distinct endpoints of the seed edges
 * and negatives, ascending; tfs_sample_link_* read its label edges. TFS_ERANGE names an endpoint
 * outside the store's nodes, TFS_EINVAL a bad option or labels of another length. */
tfs_status tfs_sample_edges(tfs_sampler *sampler, const int64_t *src, const int64_t *dst, const int64_t *labels,
                            int64_t n, const char *link_options_json, struct tfs_sample **out);
/* {"edge_label_index": m, "edge_label": m or 0, "src_index": n, "dst_pos_index": n,
 * "dst_neg_index": n * amount, "triplet": bool}: the lengths of the arrays below (binary and no
 * negatives fill edge_label_index and edge_label, triplet the other three). TFS_ENOENT for a
 * sample drawn from nodes. */
tfs_status tfs_sample_link_json(struct tfs_sample *sample, char *buf, size_t cap, size_t *needed);
/* Copies the label edges, local ids into the sample's nodes (any pointer may be NULL):
 * edge_label_index (2 * m: the m sources, then the m destinations; seed edges in input order,
 * then the negative pairs), edge_label (the labels or 1s, then a 0 a negative pair),
 * src_index and dst_pos_index (seed edge i's endpoints), dst_neg_index (seed edge i's negative
 * destinations at [i * amount, (i + 1) * amount)). */
tfs_status tfs_sample_link_copy(struct tfs_sample *sample, int64_t *edge_label_index, int64_t *edge_label,
                                int64_t *src_index, int64_t *dst_pos_index, int64_t *dst_neg_index);

/* ---- Sampling of graphs of several types (the types as in tierfs_store.h) ---- */
/* options_json: {"fanouts": {"src:rel:dst": [per hop, -1 = all], ... every edge type, one length},
 * "replace": false, "seed": 0, "workers": 0}. The k-th sample draws with seed + k. */
tfs_status tfs_hetero_sampler_create(tfs_store *store, const char *options_json, tfs_hetero_sampler **out);
tfs_status tfs_hetero_sampler_free(tfs_hetero_sampler *sampler);
/* Samples the k-hop neighborhood of seeds, ids of seed_type. Per node type, nodes are the seeds
 * first (seed type), then each hop's new nodes; per edge type, edges (row: src-type local id ->
 * col: dst-type local id) hop after hop. */
tfs_status tfs_hetero_sample(tfs_hetero_sampler *sampler, const char *seed_type, const int64_t *seeds, int64_t n,
                             struct tfs_hetero_sample **out);
/* {"nodes_per_hop": {node type: [seeds, hop 1, ...]}, "edges_per_hop": {edge type: [...]},
 * "edge_ids": {edge type: true when it has edge ids}}: the sizes of the lists below. */
tfs_status tfs_hetero_sample_json(struct tfs_hetero_sample *sample, char *buf, size_t cap, size_t *needed);
/* Copies node_type's sampled node ids (sum of its nodes_per_hop). */
tfs_status tfs_hetero_sample_nodes(struct tfs_hetero_sample *sample, const char *node_type, int64_t *out);
/* Copies edge_type's sampled edges (sum of its edges_per_hop); edge_ids may be NULL. */
tfs_status tfs_hetero_sample_edges(struct tfs_hetero_sample *sample, const char *edge_type, int64_t *row,
                                   int64_t *col, int64_t *edge_ids);
tfs_status tfs_hetero_sample_free(struct tfs_hetero_sample *sample);
/* Link sampling of a heterogeneous graph (tfs_sample_edges for one edge type; docs: ARCHITECTURE.md
 * "Link sampling"): samples around the n seed edges (src[i], dst[i]) of edge_type ("src:rel:dst";
 * NULL or "" for the only one) — src ids of its src node type, dst ids of its dst node type — with
 * the sampler's fanouts and next seed (node and link samples count alike). labels as in
 * tfs_sample_edges. link_options_json (NULL or "": no negatives) is {"neg_sampling": "binary" |
 * "triplet" | null, "amount": 1, "strict": false, "exclude_seed_edges": false,
 * "reverse_edge_types": {"src:rel:dst": "dst:rev:src"} (with exclude_seed_edges, the seed edges'
 * reverses in that edge type too)}; negatives are nodes of the edge type's node types. The seeds of
 * each node type are the distinct endpoints of that type, ascending; tfs_hetero_sample_* read the
 * sample, tfs_hetero_sample_link_* its label edges, local ids of the src type (sources) and dst type
 * (destinations). TFS_ENOENT names an unknown edge type, TFS_ERANGE an endpoint outside its type,
 * TFS_EINVAL a bad option, an unknown or mistyped reverse edge type or labels of another length. */
tfs_status tfs_hetero_sample_from_edges(tfs_hetero_sampler *sampler, const char *edge_type, const int64_t *src,
                                        const int64_t *dst, const int64_t *labels, int64_t n,
                                        const char *link_options_json, struct tfs_hetero_sample **out);
/* tfs_sample_link_json of a sample drawn from edges; TFS_ENOENT for one drawn from nodes. */
tfs_status tfs_hetero_sample_link_json(struct tfs_hetero_sample *sample, char *buf, size_t cap, size_t *needed);
/* tfs_sample_link_copy of a sample drawn from edges (same arrays and layout). */
tfs_status tfs_hetero_sample_link_copy(struct tfs_hetero_sample *sample, int64_t *edge_label_index,
                                       int64_t *edge_label, int64_t *src_index, int64_t *dst_pos_index,
                                       int64_t *dst_neg_index);

#ifdef __cplusplus
}
#endif

#endif /* TIERFS_SAMPLE_H */
