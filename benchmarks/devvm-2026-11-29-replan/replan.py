# Plans epoch 0 with the tiers placed for it (after a profile placement), then epoch 1 against those tiers:
# packed rows a batch of each. Run with TIERFS_LIB pointing at the library to measure.
import sys, tempfile, shutil, time, json, numpy as np, tierfs
ds, frac = sys.argv[1], 0.3
with tierfs.open(ds) as plain:
    n, rb = plain.num_nodes, plain.row_bytes
st = tierfs.open(ds, host_cache=int(frac * n * rb))
train = np.load(ds + "/splits/train.npy") if False else None
st.place(fanouts=[25, 10], batch_size=1024, epochs=1)
out = {}
for first, place in ((0, True), (1, False)):
    d = tempfile.mkdtemp(dir="/var/tmp")
    t = time.perf_counter()
    with st.plan_epochs([25, 10], 1024, 1, plan_dir=d, seed=1, shuffle_seed=1, place_tiers=place, first_epoch=first) as p:
        r = dict(p.report)
    shutil.rmtree(d, ignore_errors=True)
    out[f"epoch{first}"] = dict(rows_per_batch=r["rows_per_batch"]["mean"], seconds=round(time.perf_counter() - t, 2),
                                sample=round(r.get("sample_seconds", 0), 2), read=round(r.get("read_seconds", 0), 2), fill=round(r.get("fill_seconds", 0), 2), windows=r.get("pack_windows"))
print(json.dumps(out))
