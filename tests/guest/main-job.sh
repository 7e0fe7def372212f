#!/bin/sh
# The main job, inside the guest: the CLI end-to-end run with its outputs kept
# in /out, which the host copies back.
DS_OUT=/out exec /tests/cli_e2e.sh
