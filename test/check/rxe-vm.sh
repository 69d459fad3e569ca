#!/bin/bash
# make check: rc_varuna on the real Linux Soft-RoCE stack (rdma_rxe in a
# qemu guest, contrib/rxe-vm): the short selection of contrib/faults (both
# links, a link down, one-way loss, 3 fail/heal cycles with re-protection,
# 2 Open MPI runs through a fault, the endpoint after a failover with the
# link kept down: idle 7 s, peer killed, a new client; a failover in
# wakeup mode), a minute or two. Fails with a message
# if qemu cannot start. The long selection: contrib/rxe-vm/scenarios long
# (contrib/rxe-vm/README.md). test/check/faults-softib.sh runs the same
# scenario code on softib.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../../contrib/rxe-vm/scenarios" short
