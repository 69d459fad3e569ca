/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/base/uct_component.h>
#include <ucs/debug/log.h>
#include <ucs/sys/stubs.h>


/*
 * rc_varuna has its own UCT component (DESIGN.md section 3.1): its memory
 * domain will pair a primary device with a standby device. Until the
 * transport lands, the component is registered but offers no memory domain,
 * so UCP and ucx_info see it and pass over it.
 */
static ucs_status_t
uct_rc_varuna_query_md_resources(uct_component_t *component,
                                 uct_md_resource_desc_t **resources_p,
                                 unsigned *num_resources_p)
{
    ucs_debug("rc_varuna transport is not implemented yet, "
              "no memory domains");
    *resources_p     = NULL;
    *num_resources_p = 0;
    return UCS_OK;
}

static uct_component_t uct_rc_varuna_component = {
    .query_md_resources = uct_rc_varuna_query_md_resources,
    .md_open            = ucs_empty_function_return_unsupported,
    .cm_open            = ucs_empty_function_return_unsupported,
    .rkey_unpack        = ucs_empty_function_return_unsupported,
    .rkey_ptr           = ucs_empty_function_return_unsupported,
    .rkey_release       = ucs_empty_function_return_success,
    .name               = "rc_varuna",
    .md_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(
                                  &uct_rc_varuna_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)
                                  ucs_empty_function
};


/*
 * uct_query_components() dlopen()s libuct_varuna ("varuna" is in uct_MODULES)
 * before it walks the component list, so registering from the library
 * constructor is enough. UCX never unloads a UCT module, and in 1.13.1
 * uct_component_unregister() only drops the configuration entries.
 */
UCS_F_CTOR void uct_rc_varuna_init(void)
{
    uct_component_register(&uct_rc_varuna_component);
}

UCS_F_DTOR void uct_rc_varuna_cleanup(void)
{
    uct_component_unregister(&uct_rc_varuna_component);
}
