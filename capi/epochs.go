package main

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"unsafe"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/planned"
)

// epochsData are the keys of tfs_epochs_open's options_json that are a plan's data, not options:
// the options are planned.EpochOptions' table (featurestore.TableOf, the keys of `tierfs
// plan-epochs` and of Python's plan_epochs; a key left out takes the table's default). Fanouts is
// a list (a one-type plan of the store's type) or an object of edge type → list (a plan of the
// graph session, seeds of node_type); seed_edges makes a link-prediction plan (the seeds array
// holds the seed edges: epochsSeedEdges); seed_orders says the seeds array holds each planned
// epoch's seeds in order (epochs lists of n / epochs seeds, one after another:
// EpochOptions.SeedOrders); elsewhere says whose rows tfs_epochs_open_elsewhere's array holds,
// type after type (without it every id is of the plan's only packed node type).
var epochsData = []string{"fanouts", "seed_edges", "seed_orders", "elsewhere"}

// epochsRequest is options_json's data (epochsData), its options decoded into EpochOptions.
type epochsRequest struct {
	Fanouts    json.RawMessage   `json:"fanouts"`
	SeedEdges  *epochsSeedEdges  `json:"seed_edges"`
	SeedOrders bool              `json:"seed_orders"`
	Elsewhere  []epochsElsewhere `json:"elsewhere"`
}

// decodeEpochsRequest reads options_json: the plan options into o (from the table's defaults),
// the data into the request.
func decodeEpochsRequest(request string) (planned.EpochOptions, *epochsRequest, error) {
	o := featurestore.Defaults[planned.EpochOptions]()
	rest, err := featurestore.DecodeTable("epochs", []byte(request), &o, epochsData...)
	if err != nil {
		return o, nil, fail(stEINVAL, "options_json: %v (keys: %s)", err, strings.Join(append(featurestore.Names(featurestore.TableOf[planned.EpochOptions]()), epochsData...), ", "))
	}
	req := &epochsRequest{}
	for k, raw := range rest {
		var err error
		switch k {
		case "fanouts":
			req.Fanouts = raw
		case "seed_edges":
			if string(bytes.TrimSpace(raw)) != "null" {
				if req.SeedEdges, err = decodeSeedEdges(raw); err != nil {
					return o, nil, err // it names options_json: seed_edges
				}
			}
		case "seed_orders":
			err = json.Unmarshal(raw, &req.SeedOrders)
		case "elsewhere":
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			err = dec.Decode(&req.Elsewhere)
		}
		if err != nil {
			return o, nil, fail(stEINVAL, "options_json: %s: %v", k, err)
		}
	}
	return o, req, nil
}

// epochsElsewhere is one node type's part of the rows served elsewhere: the next Rows ids of the
// array.
type epochsElsewhere struct {
	NodeType string `json:"node_type"`
	Rows     int64  `json:"rows"`
}

// elsewhere is EpochOptions.Elsewhere of r over the n ids at ids.
func (r *epochsRequest) elsewhere(ids *C.int64_t, n int64) (map[string][]int64, error) {
	if err := checkArray(unsafe.Pointer(ids), "elsewhere", n, "n_elsewhere"); err != nil {
		return nil, err
	}
	all := ids64(ids, n)
	if r.Elsewhere == nil {
		if n == 0 {
			return nil, nil
		}
		return map[string][]int64{"": all}, nil
	}
	out := map[string][]int64{}
	var at int64
	for i, part := range r.Elsewhere {
		if part.Rows < 0 || part.Rows > n-at {
			return nil, fail(stEINVAL, "options_json: elsewhere[%d] (node type %q) lists %d rows, but %d of the n_elsewhere = %d ids are left", i, part.NodeType, part.Rows, n-at, n)
		}
		if _, dup := out[part.NodeType]; dup {
			return nil, fail(stEINVAL, "options_json: elsewhere names node type %q twice", part.NodeType)
		}
		out[part.NodeType] = all[at : at+part.Rows]
		at += part.Rows
	}
	if at != n {
		return nil, fail(stEINVAL, "options_json: elsewhere lists %d rows, n_elsewhere = %d", at, n)
	}
	return out, nil
}

// epochsSeedEdges is options_json's seed_edges: the seed edges' type and where they come from
// (the seeds array: n src ids, then n dst ids, then with labels n labels; or, with seeds NULL,
// the stored edge split named split, "train" by default), and the link options (the link
// family, featurestore.LinkOptions, as tfs_sample_from_edges takes them).
type epochsSeedEdges struct {
	EdgeType string `json:"edge_type"`
	Split    string `json:"split"`
	Labels   bool   `json:"labels"`
	link     featurestore.LinkOptions
}

// decodeSeedEdges reads options_json's seed_edges.
func decodeSeedEdges(raw json.RawMessage) (*epochsSeedEdges, error) {
	link, rest, err := decodeLink("options_json: seed_edges", string(raw), "edge_type", "split", "labels")
	if err != nil {
		return nil, err
	}
	r := &epochsSeedEdges{link: link}
	for k, v := range rest {
		into := map[string]any{"edge_type": &r.EdgeType, "split": &r.Split, "labels": &r.Labels}[k]
		if err := json.Unmarshal(v, into); err != nil && string(bytes.TrimSpace(v)) != "null" {
			return nil, fail(stEINVAL, "options_json: seed_edges.%s: %v", k, err)
		}
	}
	return r, nil
}

// seedEdges is the plan's SeedEdges of r over the n seed edges at seeds (NULL: the edge split).
func (r *epochsSeedEdges) seedEdges(ss *featurestore.Session, seeds *C.int64_t, n int64) (*planned.SeedEdges, error) {
	link := r.link
	if seeds == nil && n == 0 {
		if r.Labels {
			return nil, fail(stEINVAL, "options_json: seed_edges.labels with no seeds array: an edge split brings its own labels")
		}
		split := r.Split
		if split == "" {
			split = "train"
		}
		return planned.SeedEdgesOfSplit(ss, r.EdgeType, split, link)
	}
	if r.Split != "" {
		return nil, fail(stEINVAL, "options_json: seed_edges.split %q and a seeds array both given; give one", r.Split)
	}
	rows := int64(2)
	if r.Labels {
		rows = 3
	}
	if err := checkArray(unsafe.Pointer(seeds), "seeds", n, "n"); err != nil {
		return nil, err
	}
	if n > math.MaxInt64/(8*rows) {
		return nil, fail(stEINVAL, "n = %d seed edges is too many", n)
	}
	all := append([]int64(nil), ids64(seeds, rows*n)...)
	se := &planned.SeedEdges{EdgeType: r.EdgeType, Src: all[:n:n], Dst: all[n : 2*n : 2*n], Link: link}
	if r.Labels {
		se.Labels = all[2*n:]
	}
	return se, nil
}

// epochsRec is an open plan and the report of the planning its open did, if any.
type epochsRec struct {
	p      *planned.Epochs
	report *planned.EpochPlanReport
}

//export tfsgo_epochs_open
func tfsgo_epochs_open(store C.uintptr_t, request *C.char, seeds *C.int64_t, n C.int64_t, elsewhere *C.int64_t, nElsewhere C.int64_t, out unsafe.Pointer, h *C.uintptr_t) C.int {
	return on("tfs_epochs_open", stEIO, store, kindStore, func(rec *storeRec) error {
		return epochsOpen(rec, request, seeds, int64(n), elsewhere, int64(nElsewhere), out, h)
	})
}

// epochsOpen serves tfs_epochs_open and tfs_epochs_open_elsewhere (elsewhere NULL, 0 for the
// first).
func epochsOpen(rec *storeRec, request *C.char, seeds *C.int64_t, n int64, elsewhere *C.int64_t, nElsewhere int64, out unsafe.Pointer, h *C.uintptr_t) error {
	switch {
	case request == nil:
		return fail(stEINVAL, "options_json is NULL")
	case out == nil:
		return fail(stEINVAL, "out is NULL")
	}
	o, req, err := decodeEpochsRequest(C.GoString(request))
	if err != nil {
		return err
	}
	if req.Elsewhere != nil && elsewhere == nil && nElsewhere == 0 {
		return fail(stEINVAL, "options_json: elsewhere lists rows served elsewhere, but no array holds them (tfs_epochs_open_elsewhere takes it)")
	}
	if f := bytes.TrimSpace(req.Fanouts); len(f) > 0 && f[0] == '{' {
		if err := json.Unmarshal(f, &o.EdgeFanouts); err != nil {
			return fail(stEINVAL, "options_json: fanouts: %v (want {\"src:rel:dst\": [per hop], ...} or [per hop])", err)
		}
	} else if len(f) > 0 && !bytes.Equal(f, []byte("null")) {
		if err := json.Unmarshal(f, &o.Sample.Fanouts); err != nil {
			return fail(stEINVAL, "options_json: fanouts: %v (want [per hop] or {\"src:rel:dst\": [per hop], ...})", err)
		}
	}
	if o.Elsewhere, err = req.elsewhere(elsewhere, nElsewhere); err != nil {
		return err
	}
	ss := rec.s.Session()
	if req.SeedOrders {
		if req.SeedEdges != nil || seeds == nil || o.Epochs < 1 || n%int64(o.Epochs) != 0 {
			return fail(stEINVAL, "options_json: seed_orders: the seeds array holds epochs = %d orders of seed nodes, one after another; got n = %d seeds (seed edges: %v)", o.Epochs, n, req.SeedEdges != nil)
		}
		if err := checkArray(unsafe.Pointer(seeds), "seeds", n, "n"); err != nil {
			return err
		}
		all := append([]int64(nil), ids64(seeds, n)...)
		m := n / int64(o.Epochs)
		for e := range int64(o.Epochs) {
			o.SeedOrders = append(o.SeedOrders, all[e*m:(e+1)*m:(e+1)*m])
		}
	} else if req.SeedEdges != nil {
		if o.SeedEdges, err = req.SeedEdges.seedEdges(ss, seeds, n); err != nil {
			return err
		}
	} else if seeds == nil && n == 0 {
		if o.Seeds, err = ss.Split(o.NodeType, "train"); err != nil {
			return err
		}
	} else {
		if err := checkArray(unsafe.Pointer(seeds), "seeds", n, "n"); err != nil {
			return err
		}
		o.Seeds = append([]int64(nil), ids64(seeds, n)...)
	}
	p, report, err := planned.OpenEpochs(ss, o)
	if err != nil {
		return err
	}
	*h = C.uintptr_t(register(kindEpochs, &epochsRec{p: p, report: report}))
	return nil
}

//export tfsgo_epochs_cancel
func tfsgo_epochs_cancel(planDir *C.char, canceled *C.int) C.int {
	return call("tfs_epochs_cancel", stEINTERNAL, func() error {
		if planDir == nil {
			return fail(stEINVAL, "plan_dir is NULL")
		}
		found := planned.CancelEpochPlan(C.GoString(planDir))
		if canceled != nil {
			*canceled = 0
			if found {
				*canceled = 1
			}
		}
		return nil
	})
}

//export tfsgo_epochs_close
func tfsgo_epochs_close(epochs C.uintptr_t) C.int {
	return call("tfs_epochs_close", stEINTERNAL, func() error {
		rec, err := release[*epochsRec](uintptr(epochs), kindEpochs)
		if err != nil {
			return err
		}
		return rec.p.Close()
	})
}

//export tfsgo_epochs_info_json
func tfsgo_epochs_info_json(epochs C.uintptr_t, buf *C.char, capacity C.size_t, needed *C.size_t) C.int {
	return onJSON("tfs_epochs_info_json", epochs, kindEpochs, buf, capacity, needed, func(rec *epochsRec) (any, error) {
		return struct {
			Dir       string                   `json:"dir"`
			Hetero    bool                     `json:"hetero"`     // a graph session's plan
			SeedType  string                   `json:"seed_type"`  // the seeds' node type
			NodeTypes []string                 `json:"node_types"` // the node types packed
			Link      bool                     `json:"link"`       // batches of seed edges
			EdgeType  string                   `json:"edge_type"`  // a link plan's seed edge type
			Report    *planned.EpochPlanReport `json:"report"`
			Stats     planned.EpochStats       `json:"stats"`
		}{rec.p.Dir(), rec.p.Hetero(), rec.p.SeedType(), rec.p.NodeTypes(), rec.p.Link(), rec.p.EdgeType(), rec.report, rec.p.Stats()}, nil
	})
}

// checkBatch refuses an epoch or batch that is negative or beyond any plan (1<<40), before
// the plan is asked for it.
func (rec *epochsRec) checkBatch(epoch, batch int64) error {
	if epoch < 0 || batch < 0 || epoch > 1<<40 || batch > 1<<40 {
		return fail(stEINVAL, "epoch %d, batch %d: want an epoch >= 0 and a batch in [0, %d)", epoch, batch, rec.p.BatchesPerEpoch())
	}
	return nil
}

//export tfsgo_epochs_sample
func tfsgo_epochs_sample(epochs C.uintptr_t, epoch, batch C.int64_t, h *C.uintptr_t) C.int {
	return on("tfs_epochs_sample", stEIO, epochs, kindEpochs, func(rec *epochsRec) error {
		return epochsSample(rec, int64(epoch), int64(batch), h)
	})
}

func epochsSample(rec *epochsRec, epoch, batch int64, hout *C.uintptr_t) error {
	if hout == nil {
		return fail(stEINVAL, "out is NULL")
	}
	if err := rec.checkBatch(epoch, batch); err != nil {
		return err
	}
	if rec.p.Link() {
		_, hl, err := rec.p.SampleEdges(int(epoch), int(batch))
		if err != nil {
			return err
		}
		srec := newSampleRec(&hl.HeteroSample, rec.p.Session())
		srec.link = &hl.LinkLabels // the tfs_sample_link_* calls read them
		*hout = C.uintptr_t(register(kindSample, srec))
		return nil
	}
	_, smp, err := rec.p.Sample(int(epoch), int(batch))
	if err != nil {
		return err
	}
	*hout = C.uintptr_t(register(kindSample, newSampleRec(smp, rec.p.Session())))
	return nil
}

//export tfsgo_epochs_gather
func tfsgo_epochs_gather(epochs C.uintptr_t, epoch, batch C.int64_t, nodeType *C.char, nodes *C.int64_t, n C.int64_t, dst unsafe.Pointer, dstBytes C.int64_t) C.int {
	return on("tfs_epochs_gather", stEIO, epochs, kindEpochs, func(rec *epochsRec) error {
		return epochsGather(rec, int64(epoch), int64(batch), cString(nodeType), nodes, int64(n), dst, int64(dstBytes))
	})
}

func epochsGather(rec *epochsRec, epoch, batch int64, nodeType string, nodes *C.int64_t, n int64, dst unsafe.Pointer, dstBytes int64) error {
	if err := rec.checkGather(epoch, batch, nodeType, nodes, n, dst, "dst", dstBytes); err != nil {
		return err
	}
	var d []byte
	if n > 0 {
		d = unsafe.Slice((*byte)(dst), dstBytes)
	}
	_, err := rec.p.Gather(int(epoch), int(batch), nodeType, ids64(nodes, n), d)
	return err
}

//export tfsgo_epochs_gather_device
func tfsgo_epochs_gather_device(epochs C.uintptr_t, epoch, batch C.int64_t, nodeType *C.char, nodes *C.int64_t, n C.int64_t, dst unsafe.Pointer, dstBytes C.int64_t, stream unsafe.Pointer) C.int {
	return on("tfs_epochs_gather_device", stEIO, epochs, kindEpochs, func(rec *epochsRec) error {
		return epochsGatherDevice(rec, int64(epoch), int64(batch), cString(nodeType), nodes, int64(n), dst, int64(dstBytes), stream)
	})
}

// epochsGatherDevice serves tfs_epochs_gather_device (dst is a device address Go never reads).
func epochsGatherDevice(rec *epochsRec, epoch, batch int64, nodeType string, nodes *C.int64_t, n int64, dst unsafe.Pointer, dstBytes int64, stream unsafe.Pointer) error {
	if err := rec.checkGather(epoch, batch, nodeType, nodes, n, dst, "dst_device", dstBytes); err != nil {
		return err
	}
	_, err := rec.p.GatherDevice(int(epoch), int(batch), nodeType, ids64(nodes, n), uintptr(dst), uintptr(stream))
	return err
}

// checkGather checks the arguments of a planned gather (dstName: the destination's parameter).
func (rec *epochsRec) checkGather(epoch, batch int64, nodeType string, nodes *C.int64_t, n int64, dst unsafe.Pointer, dstName string, dstBytes int64) error {
	if err := rec.checkBatch(epoch, batch); err != nil {
		return err
	}
	if err := checkArray(unsafe.Pointer(nodes), "nodes", n, "n"); err != nil {
		return err
	}
	if err := checkArray(dst, dstName, n, "n"); err != nil {
		return err
	}
	rb, err := rec.p.RowBytesOf(nodeType)
	if err != nil {
		return err
	}
	if dstBytes != n*rb {
		return fail(stEINVAL, "dst_bytes = %d; %d nodes of %d bytes per row need %d", dstBytes, n, rb, n*rb)
	}
	return nil
}

//export tfsgo_epochs_seeds
func tfsgo_epochs_seeds(epochs C.uintptr_t, epoch, batch C.int64_t, out *C.int64_t, capacity C.int64_t, n *C.int64_t) C.int {
	return on("tfs_epochs_seeds", stEINVAL, epochs, kindEpochs, func(rec *epochsRec) error {
		return epochsSeeds(rec, int64(epoch), int64(batch), out, int64(capacity), n)
	})
}

func epochsSeeds(rec *epochsRec, epoch, batch int64, out *C.int64_t, capacity int64, n *C.int64_t) error {
	if n == nil {
		return fail(stEINVAL, "n is NULL")
	}
	if err := rec.checkBatch(epoch, batch); err != nil {
		return err
	}
	seeds, err := rec.p.Seeds(int(epoch), int(batch))
	if err != nil {
		return err
	}
	*n = C.int64_t(len(seeds))
	if out == nil {
		return nil
	}
	if capacity < int64(len(seeds)) {
		return fail(stEINVAL, "cap = %d; batch %d of epoch %d has %d seeds", capacity, batch, epoch, len(seeds))
	}
	copy(ids64(out, int64(len(seeds))), seeds)
	return nil
}
