/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * The provider-private ABI (IBVERBS_PRIVATE_34). Hardware providers that
 * programs link directly (perftest links libmlx5 and libefa) import these
 * symbols, and the loader binds them at start-up (BIND_NOW), so they must
 * exist. Their constructors call verbs_register_driver_34, which registers
 * nothing here: the only devices are softib's, so no provider is ever
 * asked to open one and no other entry is ever called. Should one be, it
 * logs once and fails with EOPNOTSUPP.
 */
#include "sib_log.h"

#include <errno.h>
#include <stdbool.h>


bool verbs_allow_disassociate_destroy;

void verbs_register_driver_34(void *ops);

void verbs_register_driver_34(void *ops)
{
    (void)ops;
}

long sib_private_abi_unsupported(void);

long sib_private_abi_unsupported(void)
{
    static int warned;

    if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) {
        sib_log_warn("a kernel verbs provider called into softib; "
                     "softib devices have no kernel driver");
    }
    errno = EOPNOTSUPP;
    return 0;
}

#define SIB_PRIVATE_STUB(_name) \
    long _name(void) __attribute__((alias("sib_private_abi_unsupported")));

SIB_PRIVATE_STUB(__ioctl_final_num_attrs)
SIB_PRIVATE_STUB(__verbs_log)
SIB_PRIVATE_STUB(_verbs_init_and_alloc_context)
SIB_PRIVATE_STUB(execute_ioctl)
SIB_PRIVATE_STUB(ibv_cmd_advise_mr)
SIB_PRIVATE_STUB(ibv_cmd_alloc_dm)
SIB_PRIVATE_STUB(ibv_cmd_alloc_mw)
SIB_PRIVATE_STUB(ibv_cmd_alloc_pd)
SIB_PRIVATE_STUB(ibv_cmd_attach_mcast)
SIB_PRIVATE_STUB(ibv_cmd_close_xrcd)
SIB_PRIVATE_STUB(ibv_cmd_create_ah)
SIB_PRIVATE_STUB(ibv_cmd_create_counters)
SIB_PRIVATE_STUB(ibv_cmd_create_cq)
SIB_PRIVATE_STUB(ibv_cmd_create_cq_ex)
SIB_PRIVATE_STUB(ibv_cmd_create_flow)
SIB_PRIVATE_STUB(ibv_cmd_create_flow_action_esp)
SIB_PRIVATE_STUB(ibv_cmd_create_qp)
SIB_PRIVATE_STUB(ibv_cmd_create_qp_ex)
SIB_PRIVATE_STUB(ibv_cmd_create_qp_ex2)
SIB_PRIVATE_STUB(ibv_cmd_create_rwq_ind_table)
SIB_PRIVATE_STUB(ibv_cmd_create_srq)
SIB_PRIVATE_STUB(ibv_cmd_create_srq_ex)
SIB_PRIVATE_STUB(ibv_cmd_create_wq)
SIB_PRIVATE_STUB(ibv_cmd_dealloc_mw)
SIB_PRIVATE_STUB(ibv_cmd_dealloc_pd)
SIB_PRIVATE_STUB(ibv_cmd_dereg_mr)
SIB_PRIVATE_STUB(ibv_cmd_destroy_ah)
SIB_PRIVATE_STUB(ibv_cmd_destroy_counters)
SIB_PRIVATE_STUB(ibv_cmd_destroy_cq)
SIB_PRIVATE_STUB(ibv_cmd_destroy_flow)
SIB_PRIVATE_STUB(ibv_cmd_destroy_flow_action)
SIB_PRIVATE_STUB(ibv_cmd_destroy_qp)
SIB_PRIVATE_STUB(ibv_cmd_destroy_rwq_ind_table)
SIB_PRIVATE_STUB(ibv_cmd_destroy_srq)
SIB_PRIVATE_STUB(ibv_cmd_destroy_wq)
SIB_PRIVATE_STUB(ibv_cmd_detach_mcast)
SIB_PRIVATE_STUB(ibv_cmd_free_dm)
SIB_PRIVATE_STUB(ibv_cmd_get_context)
SIB_PRIVATE_STUB(ibv_cmd_modify_cq)
SIB_PRIVATE_STUB(ibv_cmd_modify_flow_action_esp)
SIB_PRIVATE_STUB(ibv_cmd_modify_qp)
SIB_PRIVATE_STUB(ibv_cmd_modify_qp_ex)
SIB_PRIVATE_STUB(ibv_cmd_modify_srq)
SIB_PRIVATE_STUB(ibv_cmd_modify_wq)
SIB_PRIVATE_STUB(ibv_cmd_open_qp)
SIB_PRIVATE_STUB(ibv_cmd_open_xrcd)
SIB_PRIVATE_STUB(ibv_cmd_poll_cq)
SIB_PRIVATE_STUB(ibv_cmd_post_recv)
SIB_PRIVATE_STUB(ibv_cmd_post_send)
SIB_PRIVATE_STUB(ibv_cmd_post_srq_recv)
SIB_PRIVATE_STUB(ibv_cmd_query_context)
SIB_PRIVATE_STUB(ibv_cmd_query_device_any)
SIB_PRIVATE_STUB(ibv_cmd_query_mr)
SIB_PRIVATE_STUB(ibv_cmd_query_port)
SIB_PRIVATE_STUB(ibv_cmd_query_qp)
SIB_PRIVATE_STUB(ibv_cmd_query_srq)
SIB_PRIVATE_STUB(ibv_cmd_read_counters)
SIB_PRIVATE_STUB(ibv_cmd_reg_dm_mr)
SIB_PRIVATE_STUB(ibv_cmd_reg_dmabuf_mr)
SIB_PRIVATE_STUB(ibv_cmd_reg_mr)
SIB_PRIVATE_STUB(ibv_cmd_req_notify_cq)
SIB_PRIVATE_STUB(ibv_cmd_rereg_mr)
SIB_PRIVATE_STUB(ibv_cmd_resize_cq)
SIB_PRIVATE_STUB(ibv_query_gid_type)
SIB_PRIVATE_STUB(ibv_read_ibdev_sysfs_file)
SIB_PRIVATE_STUB(verbs_init_cq)
SIB_PRIVATE_STUB(verbs_open_device)
SIB_PRIVATE_STUB(verbs_set_ops)
SIB_PRIVATE_STUB(verbs_uninit_context)
