#!/bin/bash
# make check: rc_varuna on the real Linux Soft-RoCE stack (rdma_rxe in a
# qemu guest, contrib/rxe-vm): the short selection (both links, a link
# down, one-way loss, 3 fail/heal cycles with re-protection), a few
# minutes. Fails with a message if qemu cannot start. The long selection:
# contrib/rxe-vm/scenarios long (README.md, "The real stack").
exec bash "$(dirname "${BASH_SOURCE[0]}")/../../contrib/rxe-vm/scenarios" short
