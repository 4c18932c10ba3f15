// example.cpp — the tierfs C API from C++, with small RAII wrappers: each handle is closed or freed
// by a destructor, and every failed call throws std::runtime_error with tfs_last_error().
//
//   example_cpp [--host-cache BYTES] [--unverified] [--pread] [DATASET [IDS OUT]]
//       Without DATASET: a small synthetic dataset, written once to ./tierfs-examples/c-synth (as example.c).
//
// Build, after `make install` (or with `python -m tierfs --cflags --libs` for the wheel's copies):
//   c++ -std=c++17 -Wall -O2 example.cpp $(pkg-config --cflags --libs tierfs) -o example_cpp
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tierfs.h"

namespace tierfs {

inline void check(tfs_status st, const char *what) {
  if (st != TFS_OK) {
    throw std::runtime_error(std::string(what) + " failed (status " + std::to_string(static_cast<int>(st)) +
                             "): " + tfs_last_error());
  }
}

struct Sample {
  std::vector<int64_t> nodes, row, col, nodes_per_hop, edges_per_hop;
};

class Store;

// counts is the first list of integers after key in json: a one-type sample's per-hop counts in
// its tfs_sample_json.
static std::vector<int64_t> counts(const std::string &json, const std::string &key) {
  std::vector<int64_t> out;
  size_t p = json.find(key);
  p = p == std::string::npos ? p : json.find('[', p);
  if (p == std::string::npos) return out;
  for (const char *c = json.c_str() + p + 1; *c != ']' && *c != '\0';) {
    char *end;
    long long v = std::strtoll(c, &end, 10);
    if (end == c) {
      c++;
      continue;
    }
    out.push_back(v);
    c = end;
  }
  return out;
}

// Sampler draws k-hop neighborhoods; one thread at a time.
class Sampler {
 public:
  Sampler(const Sampler &) = delete;
  Sampler &operator=(const Sampler &) = delete;
  Sampler(Sampler &&o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  ~Sampler() {
    if (h_ != nullptr) tfs_sampler_free(h_);
  }

  // sample draws seeds of the graph's one node type (nullptr: the only type) and copies the one
  // node type's and edge type's arrays out.
  Sample sample(const std::vector<int64_t> &seeds) {
    // "struct tfs_sample": the plain name tfs_sample is the sampling function.
    struct tfs_sample *raw = nullptr;
    check(tfs_sample(h_, nullptr, seeds.data(), static_cast<int64_t>(seeds.size()), &raw), "tfs_sample");
    std::unique_ptr<struct tfs_sample, tfs_status (*)(struct tfs_sample *)> s(raw, tfs_sample_free);
    size_t needed = 0;
    check(tfs_sample_json(s.get(), nullptr, 0, &needed), "tfs_sample_json (size)");
    std::string json(needed, '\0');
    check(tfs_sample_json(s.get(), &json[0], json.size(), &needed), "tfs_sample_json");
    Sample out;
    out.nodes_per_hop = counts(json, "\"nodes_per_hop\"");
    out.edges_per_hop = counts(json, "\"edges_per_hop\"");
    int64_t nn = 0, ne = 0;
    for (int64_t c : out.nodes_per_hop) nn += c;
    for (int64_t c : out.edges_per_hop) ne += c;
    out.nodes.resize(nn);
    out.row.resize(ne);
    out.col.resize(ne);
    check(tfs_sample_nodes(s.get(), nullptr, out.nodes.data()), "tfs_sample_nodes");
    check(tfs_sample_edges(s.get(), nullptr, out.row.data(), out.col.data(), nullptr), "tfs_sample_edges");
    return out;
  }

 private:
  friend class Store;
  explicit Sampler(tfs_sampler *h) : h_(h) {}
  tfs_sampler *h_;
};

// Store is an open dataset; tfs_close runs in the destructor.
class Store {
 public:
  explicit Store(const std::string &path, const tfs_open_options *opts = nullptr) {
    check(tfs_open(path.c_str(), opts, &h_), "tfs_open");
    info_.struct_size = sizeof info_;
    check(tfs_store_info_get(h_, NULL, &info_), "tfs_store_info_get");
  }
  Store(const Store &) = delete;
  Store &operator=(const Store &) = delete;
  ~Store() {
    if (h_ != nullptr) tfs_close(h_);
  }

  const tfs_store_info &info() const { return info_; }

  std::vector<unsigned char> gather(const std::vector<int64_t> &ids) const {
    std::vector<unsigned char> rows(ids.size() * static_cast<size_t>(info_.row_bytes));
    check(tfs_gather(h_, NULL, NULL, ids.data(), static_cast<int64_t>(ids.size()), rows.data(), static_cast<int64_t>(rows.size())),
          "tfs_gather");
    return rows;
  }

  std::vector<int64_t> labels(const std::vector<int64_t> &ids) const {
    std::vector<int64_t> out(ids.size());
    check(tfs_labels(h_, NULL, ids.data(), static_cast<int64_t>(ids.size()), out.data()), "tfs_labels");
    return out;
  }

  std::vector<int64_t> split(const std::string &name) const {
    int64_t n = 0;
    check(tfs_split(h_, NULL, name.c_str(), nullptr, 0, &n), "tfs_split (size)");
    std::vector<int64_t> ids(n);
    check(tfs_split(h_, NULL, name.c_str(), ids.data(), n, &n), "tfs_split");
    return ids;
  }

  // sampler makes a sampler of the graph's one edge type: fanouts per hop.
  Sampler sampler(std::vector<int32_t> fanouts, uint64_t seed) const {
    std::string so = "{\"fanouts\": [";
    for (size_t h = 0; h < fanouts.size(); h++) so += (h ? ", " : "") + std::to_string(fanouts[h]);
    so += "], \"seed\": " + std::to_string(seed) + "}";
    tfs_sampler *h = nullptr;
    check(tfs_sampler_create(h_, so.c_str(), &h), "tfs_sampler_create");
    return Sampler(h);
  }

  std::string stats_json() const {
    size_t needed = 0;
    check(tfs_stats_json(h_, nullptr, 0, &needed), "tfs_stats_json (size)");
    std::string s(needed, '\0');
    check(tfs_stats_json(h_, &s[0], s.size(), &needed), "tfs_stats_json");
    s.resize(needed - 1);
    return s;
  }

 private:
  tfs_store *h_ = nullptr;
  tfs_store_info info_{};
};

}  // namespace tierfs

static int run(int argc, char **argv) {
  tfs_open_options opts{};
  opts.struct_size = sizeof opts;
  opts.device = -1;
  int i = 1;
  for (; i < argc && std::strncmp(argv[i], "--", 2) == 0; i++) {
    std::string a = argv[i];
    if (a == "--host-cache" && i + 1 < argc) {
      opts.host_cache_bytes = std::stoll(argv[++i]);
    } else if (a == "--unverified") {
      opts.unverified_reads = 1;
    } else if (a == "--pread") {
      opts.io_backend = "pread";
    } else {
      throw std::invalid_argument("unknown flag " + a);
    }
  }
  std::string dataset = "tierfs-examples/c-synth";
  if (argc - i == 0) {
    // No dataset named: a small synthetic one under the working directory, written once.
    if (!std::ifstream(dataset + "/manifest.json")) {
      std::string json = "{\"out\": \"" + dataset +
                         "\", \"nodes\": 5000, \"avg_degree\": 8, \"dim\": 64, \"dtype\": \"float32\", "
                         "\"classes\": 10, \"seed\": 7}";
      tierfs::check(tfs_synth(json.c_str()), "tfs_synth");
      std::printf("synthesized 5000 nodes of dim 64 (float32) into %s\n", dataset.c_str());
    }
  } else if (argc - i != 1 && argc - i != 3) {
    std::cerr << "usage: example_cpp [--host-cache BYTES] [--unverified] [--pread] [DATASET [IDS OUT]]\n"
                 "Without DATASET: "
              << dataset << " (a synthetic graph, written once)\n";
    return 2;
  } else {
    dataset = argv[i];
  }
  tierfs::Store store(dataset, &opts);
  const tfs_store_info &info = store.info();
  std::printf("dataset %s: %" PRId64 " nodes, %" PRId64 " edges, features %" PRId64 " x %s (%" PRId64
              " bytes/row), %" PRId64 " classes, io %s\n",
              dataset.c_str(), info.num_nodes, info.num_edges, info.dim, info.dtype, info.row_bytes, info.num_classes,
              info.io_backend);

  if (argc - i == 3) {
    std::ifstream in(argv[i + 1], std::ios::binary | std::ios::ate);
    if (!in) throw std::runtime_error(std::string("cannot open ") + argv[i + 1]);
    std::vector<int64_t> ids(static_cast<size_t>(in.tellg()) / sizeof(int64_t));
    in.seekg(0);
    in.read(reinterpret_cast<char *>(ids.data()), static_cast<std::streamsize>(ids.size() * sizeof(int64_t)));
    std::vector<unsigned char> rows = store.gather(ids);
    std::ofstream out(argv[i + 2], std::ios::binary);
    out.write(reinterpret_cast<const char *>(rows.data()), static_cast<std::streamsize>(rows.size()));
    if (!out) throw std::runtime_error(std::string("cannot write ") + argv[i + 2]);
    std::printf("gathered %zu rows of %s into %s\n", ids.size(), argv[i + 1], argv[i + 2]);
    return 0;
  }

  std::vector<int64_t> train = store.split("train");
  std::vector<int64_t> seeds(train.begin(), train.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(64, train.size())));
  std::printf("train split: %zu nodes; seeding with the first %zu\n", train.size(), seeds.size());
  tierfs::Sampler sampler = store.sampler({10, 5}, 42);
  tierfs::Sample s = sampler.sample(seeds);
  std::printf("sample: %zu nodes, %zu edges over %zu hops\n", s.nodes.size(), s.row.size(), s.edges_per_hop.size());
  std::vector<unsigned char> feats = store.gather(s.nodes);
  uint64_t sum = 0;
  for (unsigned char b : feats) sum = sum * 31 + b;
  std::printf("gathered %zu rows (%zu bytes), byte hash %016" PRIx64 "\n", s.nodes.size(), feats.size(), sum);
  if (info.num_classes > 0) {
    std::vector<int64_t> labels = store.labels(seeds);
    std::printf("labels of the first seeds:");
    for (size_t k = 0; k < labels.size() && k < 8; k++) std::printf(" %" PRId64, labels[k]);
    std::printf("\n");
  }
  std::string stats = store.stats_json();
  std::printf("stats: %.160s%s\n", stats.c_str(), stats.size() > 160 ? "..." : "");
  return 0;
}

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception &e) {
    std::cerr << "example_cpp: " << e.what() << "\n";
    return 1;
  }
}
