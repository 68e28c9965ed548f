import time, cProfile, pstats
t0=time.perf_counter()
from tests.sabotage.conftest import BENCHMARK, TASKS, SPLITS
from flashrsi_dagster.contamination.check import ContentCheck
from flashrsi_dagster.contamination.detector import scan
t1=time.perf_counter()
check = ContentCheck(BENCHMARK, lambda: TASKS, SPLITS)
pr=cProfile.Profile(); pr.enable()
idx = check.index
t2=time.perf_counter()
from pathlib import Path
files = {str(p.relative_to("examples")): p.read_bytes() for p in Path("examples").rglob("*") if p.is_file()}
s = scan(files, idx)
t3=time.perf_counter()
pr.disable()
print(f"import {t1-t0:.2f} index {t2-t1:.2f} scan {len(files)} files {sum(map(len,files.values()))} B {t3-t2:.2f}")
pstats.Stats(pr).sort_stats("cumtime").print_stats(18)
