"""A metrics collector: every `interval` seconds, appends a line with a sample counter to the
file `output` names. Settings come from the file given with --config."""

import argparse
import configparser
import os
import time

parser = argparse.ArgumentParser()
parser.add_argument("--config", required=True)
settings = configparser.ConfigParser()
settings.read(parser.parse_args().config)
section = settings["collector"]
output = section["output"]
interval = float(section["interval"])
os.makedirs(os.path.dirname(output), exist_ok=True)
sample = 0
while True:
    sample += 1
    with open(output, "a") as handle:
        handle.write(f"sample={sample} pid={os.getpid()}\n")
    time.sleep(interval)
