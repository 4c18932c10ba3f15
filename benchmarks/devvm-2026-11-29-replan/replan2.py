# Epoch 1 planned against the profile placement alone (the on-demand placement), for comparison.
import sys, tempfile, shutil, time, json, numpy as np, tierfs
ds, frac = sys.argv[1], 0.3
with tierfs.open(ds) as plain:
    n, rb = plain.num_nodes, plain.row_bytes
st = tierfs.open(ds, host_cache=int(frac * n * rb))
st.place(fanouts=[25, 10], batch_size=1024, epochs=1)
for first in (0, 1):
    d = tempfile.mkdtemp(dir="/var/tmp")
    with st.plan_epochs([25, 10], 1024, 1, plan_dir=d, seed=1, shuffle_seed=1, place_tiers=False, first_epoch=first) as p:
        r = dict(p.report)
    shutil.rmtree(d, ignore_errors=True)
    print(first, r["rows_per_batch"]["mean"])
