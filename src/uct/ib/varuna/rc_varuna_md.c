/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "rc_varuna.h"

#include <uct/base/uct_md.h>
#include <ucs/arch/atomic.h>
#include <ucs/async/async.h>
#include <ucs/arch/bitops.h>
#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>
#include <ucs/sys/string.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>


/*
 * The rc_varuna memory domain (DESIGN.md section 3.1) pairs a primary
 * device with a standby device: on modern NICs every port is a device of
 * its own, with its own protection domain and keys. Memory is registered
 * on both; the packed remote key carries both keys, the memory handle both
 * local keys, so a lane on either device can address the same bytes, and
 * failover stays invisible to UCP.
 *
 * The memory domain is a uct_ib_md_t of the primary device (UCX's IB
 * interface code needs one), built with UCX's exported helpers and given
 * rc_varuna's own operations. The standby device, if it is another device,
 * is an ordinary IB memory domain owned by this one.
 *
 * Memory domain names say the pairing: "mlx5_0+mlx5_1" pairs two devices,
 * "mlx5_0+mlx5_0" two ports of one device, "mlx5_0" has no standby.
 */

#define UCT_RC_VARUNA_MD_NAME_SEP     '+'
#define UCT_RC_VARUNA_ACCESS_FLAGS    (IBV_ACCESS_LOCAL_WRITE |  \
                                       IBV_ACCESS_REMOTE_WRITE | \
                                       IBV_ACCESS_REMOTE_READ |  \
                                       IBV_ACCESS_REMOTE_ATOMIC)


/* rc_varuna's own settings; the IB memory domain settings (UCX_IB_*) are
 * read with the IB component's table when a memory domain opens. */
static ucs_config_field_t uct_rc_varuna_md_config_table[] = {
    {"STANDBY", "auto",
     "Where the standby QP of every endpoint lives:\n"
     " auto       - an active port of another device if there is one, else\n"
     "              another active port of the same device\n"
     " same       - another active port of the same device\n"
     " <dev>      - that device: the port with the same number if it is\n"
     "              active, else its first active port\n"
     " <dev>:<port> - that port\n"
     "or a comma-separated list of <primary>=<one of the above> for each\n"
     "primary device, with an optional default item without '=' (else\n"
     "auto), e.g. mlx5_0=mlx5_1,mlx5_1=mlx5_0.\n"
     "A port that is down when the interface opens is taken when no other\n"
     "fits: endpoints get their standby lane on it once it comes up.",
     ucs_offsetof(uct_rc_varuna_md_config_t, standby),
     UCS_CONFIG_TYPE_STRING},

    {"REQUIRE_STANDBY", "n",
     "Do not use a device that has no standby port. By default such a device\n"
     "is used without failover, and the log says so (at diag level).",
     ucs_offsetof(uct_rc_varuna_md_config_t, require_standby),
     UCS_CONFIG_TYPE_BOOL},

    {NULL}
};


/* Active ports of a device, as a bit mask (bit p for port p) */
/* The ports of a device, and which of them are active now */
typedef struct {
    uint64_t present;
    uint64_t active;
} uct_rc_varuna_ports_t;

static void uct_rc_varuna_query_ports(struct ibv_device *ibv_device,
                                      uct_rc_varuna_ports_t *ports)
{
    struct ibv_device_attr dev_attr;
    struct ibv_port_attr port_attr;
    struct ibv_context *ctx;
    uint8_t port;

    ports->present = 0;
    ports->active  = 0;
    ctx = ibv_open_device(ibv_device);
    if (ctx == NULL) {
        return;
    }
    if (ibv_query_device(ctx, &dev_attr) == 0) {
        for (port = 1; (port <= dev_attr.phys_port_cnt) && (port < 64);
             port++) {
            ports->present |= UCS_BIT(port);
            if ((ibv_query_port(ctx, port, &port_attr) == 0) &&
                (port_attr.state == IBV_PORT_ACTIVE)) {
                ports->active |= UCS_BIT(port);
            }
        }
    }
    ibv_close_device(ctx);
}

/* Standby settings that name no device */
#define UCT_RC_VARUNA_STANDBY_SAME   "="

/*
 * The item of UCX_RC_VARUNA_STANDBY for a primary device: "<primary>=<item>"
 * for that device, else the item without '=', else "auto".
 */
static void uct_rc_varuna_standby_item(const char *spec, const char *primary,
                                       char *item, size_t max)
{
    size_t primary_len = strlen(primary);
    const char *p, *end, *eq;
    size_t len;

    ucs_strncpy_zero(item, "auto", max);
    for (p = spec; *p != '\0'; p = (*end == ',') ? end + 1 : end) {
        end = strchr(p, ',');
        if (end == NULL) {
            end = p + strlen(p);
        }
        eq = memchr(p, '=', end - p);
        if (eq == NULL) {
            len = ucs_min((size_t)(end - p), max - 1);
            memcpy(item, p, len);
            item[len] = '\0';
        } else if (((size_t)(eq - p) == primary_len) &&
                   !strncmp(p, primary, primary_len)) {
            len = ucs_min((size_t)(end - eq - 1), max - 1);
            memcpy(item, eq + 1, len);
            item[len] = '\0';
            return;
        }
    }
}

/* "dev" or "dev:port"; "auto" leaves dev empty, "same" sets it to "=". */
static ucs_status_t uct_rc_varuna_parse_standby(const char *spec, char *dev,
                                                size_t max, uint8_t *port_p)
{
    const char *colon;
    char *end;
    unsigned long port;

    dev[0]  = '\0';
    *port_p = 0;
    if (!strcasecmp(spec, "auto")) {
        return UCS_OK;
    }
    if (!strcasecmp(spec, "same")) {
        ucs_strncpy_zero(dev, UCT_RC_VARUNA_STANDBY_SAME, max);
        return UCS_OK;
    }

    colon = strchr(spec, ':');
    if (colon == NULL) {
        ucs_strncpy_zero(dev, spec, max);
    } else {
        port = strtoul(colon + 1, &end, 10);
        if ((*end != '\0') || (port < 1) || (port > 255) ||
            ((size_t)(colon - spec) >= max)) {
            ucs_error("invalid UCX_RC_VARUNA_STANDBY value '%s': expected "
                      "auto, <dev> or <dev>:<port>", spec);
            return UCS_ERR_INVALID_PARAM;
        }
        ucs_strncpy_zero(dev, spec, (size_t)(colon - spec) + 1);
        *port_p = (uint8_t)port;
    }
    return (dev[0] != '\0') ? UCS_OK : UCS_ERR_INVALID_PARAM;
}

/*
 * The standby device of device i, by the configured rule; -1 if none.
 * Ports that are up come first; a device or port that is down now is still
 * taken when nothing else is there: its interface gets a standby side, and
 * endpoints their standby lane when the port comes up (re-protection).
 * Otherwise a process started during a link failure would run without
 * failover for its lifetime.
 */
static int uct_rc_varuna_pick_standby(struct ibv_device **devices,
                                      const uct_rc_varuna_ports_t *ports,
                                      int num, int i, const char *standby_dev)
{
    int j;

    if (!strcmp(standby_dev, UCT_RC_VARUNA_STANDBY_SAME)) {
        return (ucs_popcount(ports[i].present) >= 2) ? i : -1;
    }

    if (standby_dev[0] != '\0') {
        for (j = 0; j < num; j++) {
            if (strcmp(ibv_get_device_name(devices[j]), standby_dev)) {
                continue;
            }
            /* the named device itself: only with another port; a port is
             * never its own standby (it protects nothing) */
            if ((j == i) && (ucs_popcount(ports[i].present) < 2)) {
                return -1;
            }
            return ports[j].present ? j : -1;
        }
        return -1;
    }

    /* another device first, taking the next one so that pairs spread */
    for (j = 1; j < num; j++) {
        if (ports[(i + j) % num].active) {
            return (i + j) % num;
        }
    }
    /* else another port of the same device that is up */
    if (ucs_popcount(ports[i].active) >= 2) {
        return i;
    }
    /* else what is down now */
    for (j = 1; j < num; j++) {
        if (ports[(i + j) % num].present) {
            return (i + j) % num;
        }
    }
    return (ucs_popcount(ports[i].present) >= 2) ? i : -1;
}

static ucs_status_t
uct_rc_varuna_query_md_resources(uct_component_t *component,
                                 uct_md_resource_desc_t **resources_p,
                                 unsigned *num_resources_p)
{
    uct_rc_varuna_md_config_t *config;
    uct_md_resource_desc_t *resources;
    struct ibv_device **devices;
    char standby_dev[UCT_DEVICE_NAME_MAX];
    char item[UCT_DEVICE_NAME_MAX + 8];
    uct_rc_varuna_ports_t *ports;
    ucs_status_t status;
    uint8_t standby_port;
    int i, j, num, count = 0;

    *resources_p     = NULL;
    *num_resources_p = 0;

    status = uct_md_config_read(component, NULL, NULL,
                                (uct_md_config_t**)&config);
    if (status != UCS_OK) {
        return status;
    }

    devices = ibv_get_device_list(&num);
    if ((devices == NULL) || (num == 0)) {
        ucs_debug("rc_varuna: no IB devices");
        goto out_free_list;
    }

    ports     = ucs_calloc(num, sizeof(*ports), "rc_varuna_ports");
    resources = ucs_calloc(num, sizeof(*resources), "rc_varuna_resources");
    if ((ports == NULL) || (resources == NULL)) {
        status = UCS_ERR_NO_MEMORY;
        goto out_free;
    }

    for (i = 0; i < num; i++) {
        if (uct_ib_device_is_accessible(devices[i])) {
            uct_rc_varuna_query_ports(devices[i], &ports[i]);
        }
    }

    for (i = 0; i < num; i++) {
        if (ports[i].active == 0) {
            continue;
        }
        uct_rc_varuna_standby_item(config->standby,
                                   ibv_get_device_name(devices[i]), item,
                                   sizeof(item));
        status = uct_rc_varuna_parse_standby(item, standby_dev,
                                             sizeof(standby_dev),
                                             &standby_port);
        if (status != UCS_OK) {
            goto out_free;
        }
        /* a standby device named by the user must exist, and so must a
         * port named with it: a typo would otherwise leave every endpoint
         * silently without failover */
        j = i;
        if ((standby_dev[0] != '\0') &&
            strcmp(standby_dev, UCT_RC_VARUNA_STANDBY_SAME)) {
            for (j = 0; j < num; j++) {
                if (!strcmp(ibv_get_device_name(devices[j]), standby_dev)) {
                    break;
                }
            }
            if (j == num) {
                ucs_error("UCX_RC_VARUNA_STANDBY=%s: there is no device "
                          "'%s'; rc_varuna is not used", config->standby,
                          standby_dev);
                status = UCS_ERR_NO_DEVICE;
                goto out_free;
            }
        }
        if ((standby_port != 0) &&
            ((standby_port >= 64) ||
             !(ports[j].present & UCS_BIT(standby_port)))) {
            ucs_error("UCX_RC_VARUNA_STANDBY=%s: device '%s' has no port %u "
                      "(ports 1 to %u); rc_varuna is not used",
                      config->standby, ibv_get_device_name(devices[j]),
                      standby_port,
                      ucs_popcount(ports[j].present));
            status = UCS_ERR_NO_DEVICE;
            goto out_free;
        }
        j = uct_rc_varuna_pick_standby(devices, ports, num, i, standby_dev);
        if ((j < 0) && config->require_standby) {
            ucs_diag("rc_varuna: %s has no standby port, not used "
                     "(UCX_RC_VARUNA_REQUIRE_STANDBY=y)",
                     ibv_get_device_name(devices[i]));
            continue;
        }
        if (j < 0) {
            ucs_snprintf_zero(resources[count].md_name, UCT_MD_NAME_MAX, "%s",
                              ibv_get_device_name(devices[i]));
        } else {
            ucs_snprintf_zero(resources[count].md_name, UCT_MD_NAME_MAX,
                              "%s%c%s", ibv_get_device_name(devices[i]),
                              UCT_RC_VARUNA_MD_NAME_SEP,
                              ibv_get_device_name(devices[j]));
        }
        ++count;
    }

    *resources_p     = resources;
    *num_resources_p = count;
    resources        = NULL;

out_free:
    ucs_free(resources);
    ucs_free(ports);
out_free_list:
    if (devices != NULL) {
        ibv_free_device_list(devices);
    }
    uct_config_release(config);
    return status;
}

static ucs_status_t uct_rc_varuna_md_query(uct_md_h uct_md,
                                           uct_md_attr_t *md_attr)
{
    uct_rc_varuna_md_t *md = ucs_derived_of(uct_md, uct_rc_varuna_md_t);

    md_attr->cap.flags            = UCT_MD_FLAG_REG |
                                    UCT_MD_FLAG_NEED_MEMH |
                                    UCT_MD_FLAG_NEED_RKEY;
    md_attr->cap.reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    md_attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    md_attr->cap.detect_mem_types = 0;
    md_attr->cap.alloc_mem_types  = 0;
    md_attr->cap.max_alloc        = 0;
    md_attr->cap.max_reg          = ULONG_MAX;
    md_attr->rkey_packed_size     = sizeof(uct_rc_varuna_packed_rkey_t);
    /* one registration per device */
    md_attr->reg_cost             = md->super.reg_cost;
    if (md->standby_md != NULL) {
        md_attr->reg_cost.c *= 2;
        md_attr->reg_cost.m *= 2;
    }
    ucs_sys_cpuset_copy(&md_attr->local_cpus, &md->super.dev.local_cpus);
    return UCS_OK;
}

static void uct_rc_varuna_memh_dereg(uct_rc_varuna_memh_t *memh)
{
    unsigned side;

    for (side = 0; side < UCT_RC_VARUNA_NUM_SIDES; side++) {
        if (memh->mr[side] != NULL) {
            uct_ib_dereg_mr(memh->mr[side]);
            memh->mr[side] = NULL;
        }
    }
}

static ucs_status_t uct_rc_varuna_mem_reg(uct_md_h uct_md, void *address,
                                          size_t length, unsigned flags,
                                          uct_mem_h *memh_p)
{
    uct_rc_varuna_md_t *md = ucs_derived_of(uct_md, uct_rc_varuna_md_t);
    int silent             = !!(flags & UCT_MD_MEM_FLAG_HIDE_ERRORS);
    uct_rc_varuna_memh_t *memh;
    ucs_status_t status;

    memh = ucs_calloc(1, sizeof(*memh), "rc_varuna_memh");
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_ib_reg_mr(md->super.pd, address, length, md->access_flags,
                           &memh->mr[UCT_RC_VARUNA_SIDE_PRIMARY], silent);
    if (status != UCS_OK) {
        goto err_free;
    }

    if (md->standby_md != NULL) {
        status = uct_ib_reg_mr(md->standby_md->pd, address, length,
                               md->access_flags,
                               &memh->mr[UCT_RC_VARUNA_SIDE_STANDBY], silent);
        if (status != UCS_OK) {
            goto err_dereg;
        }
    }

    memh->lkey[0] = memh->mr[0]->lkey;
    memh->rkey[0] = memh->mr[0]->rkey;
    /* a standby port of the same device shares the primary's keys */
    memh->lkey[1] = (memh->mr[1] != NULL) ? memh->mr[1]->lkey : memh->lkey[0];
    memh->rkey[1] = (memh->mr[1] != NULL) ? memh->mr[1]->rkey : memh->rkey[0];

    memh->super.lkey        = memh->lkey[0];
    memh->super.rkey        = memh->rkey[0];
    memh->super.atomic_rkey = UCT_IB_INVALID_MKEY;

    ucs_trace("rc_varuna: registered %p..%p lkeys 0x%x/0x%x rkeys 0x%x/0x%x",
              address, UCS_PTR_BYTE_OFFSET(address, length), memh->lkey[0],
              memh->lkey[1], memh->rkey[0], memh->rkey[1]);
    *memh_p = memh;
    return UCS_OK;

err_dereg:
    uct_rc_varuna_memh_dereg(memh);
err_free:
    ucs_free(memh);
    return status;
}

static ucs_status_t
uct_rc_varuna_mem_dereg(uct_md_h uct_md,
                        const uct_md_mem_dereg_params_t *params)
{
    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);

    uct_rc_varuna_memh_dereg(params->memh);
    ucs_free(params->memh);
    return UCS_OK;
}

static ucs_status_t
uct_rc_varuna_mkey_pack(uct_md_h uct_md, uct_mem_h uct_memh,
                        const uct_md_mkey_pack_params_t *params,
                        void *rkey_buffer)
{
    uct_rc_varuna_memh_t *memh            = uct_memh;
    uct_rc_varuna_packed_rkey_t *packed   = rkey_buffer;

    packed->rkey[0] = memh->rkey[0];
    packed->rkey[1] = memh->rkey[1];
    return UCS_OK;
}

static ucs_status_t uct_rc_varuna_rkey_unpack(uct_component_t *component,
                                              const void *rkey_buffer,
                                              uct_rkey_t *rkey_p,
                                              void **handle_p)
{
    const uct_rc_varuna_packed_rkey_t *packed = rkey_buffer;

    *rkey_p   = (uct_rkey_t)packed->rkey[0] |
                ((uct_rkey_t)packed->rkey[1] << 32);
    *handle_p = NULL;
    return UCS_OK;
}

/* ------------------------------------------------------------------------
 * Port events (DESIGN.md section 5.1): IBV_EVENT_PORT_ERR on the active
 * lane's port is the fastest failure detector, IBV_EVENT_PORT_ACTIVE starts
 * re-protection. UCX's device handler only logs port events, so rc_varuna
 * watches each device's async events (a hook of UCX patch 0005): port
 * events update the port state here, which every interface's progress
 * compares with what it last saw; UCX still handles every event, except a
 * late LAST_WQE_REACHED of a QP that re-protection reset.
 * ------------------------------------------------------------------------ */

/* The device a lane's side is on, as an index of md->events: the standby
 * side is the primary device when the standby is a port of it */
static unsigned uct_rc_varuna_md_events_index(uct_rc_varuna_md_t *md,
                                              unsigned side)
{
    return ((side == UCT_RC_VARUNA_SIDE_STANDBY) &&
            (md->standby_md != NULL)) ? 1 : 0;
}

/* QP numbers are unique per device only */
static uint64_t uct_rc_varuna_md_lwr_key(unsigned index, uint32_t qp_num)
{
    return ((uint64_t)index << 32) | qp_num;
}

/* A QP's record, created empty; call with md->lwr_lock held */
static uct_rc_varuna_lwr_t *uct_rc_varuna_md_lwr_get(uct_rc_varuna_md_t *md,
                                                     uint64_t key)
{
    khiter_t iter;
    int ret;

    iter = kh_put(uct_rc_varuna_lwr, &md->lwr, key, &ret);
    if (ret == UCS_KH_PUT_FAILED) {
        return NULL;
    }
    if (ret != UCS_KH_PUT_KEY_PRESENT) {
        memset(&kh_value(&md->lwr, iter), 0, sizeof(uct_rc_varuna_lwr_t));
    }
    return &kh_value(&md->lwr, iter);
}

/* An event has come for the QP (index: of md->events, the device). Is it a
 * late one that re-protection gave up waiting for before it reset the QP
 * (uct_rc_varuna_lane_reset)? Then UCX must not see it: it would take it
 * for the event of the QP's destruction and destroy the QP early. */
static int uct_rc_varuna_md_last_wqe_skipped(uct_rc_varuna_md_t *md,
                                             unsigned index, uint32_t qp_num)
{
    uint64_t key = uct_rc_varuna_md_lwr_key(index, qp_num);
    uct_rc_varuna_lwr_t *lwr;
    int skipped  = 0;

    ucs_spin_lock(&md->lwr_lock);
    lwr = uct_rc_varuna_md_lwr_get(md, key);
    if ((lwr != NULL) && (lwr->skip > 0)) {
        lwr->skip--;
        skipped = 1;
    }
    ucs_spin_unlock(&md->lwr_lock);
    return skipped;
}

#if !UCT_RC_VARUNA_STOCK_UCX
/* UCX handled a LAST_WQE_REACHED (counted in its record, if any) */
static void uct_rc_varuna_md_last_wqe_add(uct_rc_varuna_md_t *md,
                                          unsigned index, uint32_t qp_num)
{
    uint64_t key = uct_rc_varuna_md_lwr_key(index, qp_num);
    uct_rc_varuna_lwr_t *lwr;

    ucs_spin_lock(&md->lwr_lock);
    lwr = uct_rc_varuna_md_lwr_get(md, key);
    if (lwr != NULL) {
        lwr->seen++;
    }
    ucs_spin_unlock(&md->lwr_lock);
}
#endif

uint32_t uct_rc_varuna_md_last_wqe_count(uct_rc_varuna_md_t *md, unsigned side,
                                         uint32_t qp_num)
{
    unsigned index = uct_rc_varuna_md_events_index(md, side);
    uint64_t key   = uct_rc_varuna_md_lwr_key(index, qp_num);
    uint32_t count = 0;
    khiter_t iter;

    ucs_spin_lock(&md->lwr_lock);
    iter = kh_get(uct_rc_varuna_lwr, &md->lwr, key);
    if (iter != kh_end(&md->lwr)) {
        count = kh_value(&md->lwr, iter).seen;
    }
    ucs_spin_unlock(&md->lwr_lock);
    return count;
}

/* The next count LAST_WQE_REACHED events of the QP are late ones of a
 * reset incarnation: count them, do not give them to UCX. */
void uct_rc_varuna_md_last_wqe_skip(uct_rc_varuna_md_t *md, unsigned side,
                                    uint32_t qp_num, uint32_t count)
{
    unsigned index = uct_rc_varuna_md_events_index(md, side);
    uct_rc_varuna_lwr_t *lwr;

    ucs_spin_lock(&md->lwr_lock);
    lwr = uct_rc_varuna_md_lwr_get(md, uct_rc_varuna_md_lwr_key(index,
                                                                qp_num));
    if (lwr != NULL) {
        lwr->skip += count;
    }
    ucs_spin_unlock(&md->lwr_lock);
}

void uct_rc_varuna_md_last_wqe_forget(uct_rc_varuna_md_t *md, unsigned side,
                                      uint32_t qp_num)
{
    unsigned index = uct_rc_varuna_md_events_index(md, side);
    uint64_t key   = uct_rc_varuna_md_lwr_key(index, qp_num);
    khiter_t iter;

    ucs_spin_lock(&md->lwr_lock);
    iter = kh_get(uct_rc_varuna_lwr, &md->lwr, key);
    if (iter != kh_end(&md->lwr)) {
        kh_del(uct_rc_varuna_lwr, &md->lwr, iter);
    }
    ucs_spin_unlock(&md->lwr_lock);
}

void uct_rc_varuna_md_waker_add(uct_rc_varuna_md_t *md,
                                uct_rc_varuna_md_waker_t *waker)
{
    ucs_spin_lock(&md->wakers_lock);
    ucs_list_add_tail(&md->wakers, &waker->list);
    ucs_spin_unlock(&md->wakers_lock);
}

/* No write to the waker's fd once this returns */
void uct_rc_varuna_md_waker_remove(uct_rc_varuna_md_t *md,
                                   uct_rc_varuna_md_waker_t *waker)
{
    ucs_spin_lock(&md->wakers_lock);
    ucs_list_del(&waker->list);
    ucs_spin_unlock(&md->wakers_lock);
}

/* A device event for the interfaces' progress: wake their sleeping
 * workers (from UCX's async thread) */
static void uct_rc_varuna_md_wake(uct_rc_varuna_md_t *md)
{
    uct_rc_varuna_md_waker_t *waker;
    uint64_t one = 1;

    ucs_spin_lock(&md->wakers_lock);
    ucs_list_for_each(waker, &md->wakers, list) {
        if (write(waker->fd, &one, sizeof(one)) != sizeof(one)) {
            ucs_debug("rc_varuna: write(eventfd %d) failed: %m", waker->fd);
        }
    }
    ucs_spin_unlock(&md->wakers_lock);
}

/* Before UCX handles an event of the device (UCX patch 0005): record port
 * state changes, keep the late LAST_WQE_REACHED of a reset QP from UCX */
static int uct_rc_varuna_md_event_before(void *arg,
                                         const uct_ib_async_event_t *event)
{
    uct_rc_varuna_dev_events_t *events = arg;
    uct_rc_varuna_md_t *md             = events->md;
    uint8_t port;

    switch (event->event_type) {
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_PORT_ACTIVE:
        port = event->port_num;
        if (port <= UCT_IB_DEV_MAX_PORTS) {
            events->port_down[port] =
                    (event->event_type == IBV_EVENT_PORT_ERR);
            ucs_memory_cpu_store_fence();
            md->port_events++;
            uct_rc_varuna_md_wake(md);
        }
        return 1;
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        return !uct_rc_varuna_md_last_wqe_skipped(md, events->index,
                                                  event->qp_num);
    default:
        return 1;
    }
}

#if !UCT_RC_VARUNA_STOCK_UCX
/* After UCX has handled it: a LAST_WQE_REACHED is counted only now, so
 * re-protection, once it sees the count, knows UCX is past the event */
static void uct_rc_varuna_md_event_after(void *arg,
                                         const uct_ib_async_event_t *event)
{
    uct_rc_varuna_dev_events_t *events = arg;

    if (event->event_type == IBV_EVENT_QP_LAST_WQE_REACHED) {
        uct_rc_varuna_md_last_wqe_add(events->md, events->index,
                                      event->qp_num);
        /* re-protection waits for it */
        uct_rc_varuna_md_wake(events->md);
    }
}
#endif

#if UCT_RC_VARUNA_STOCK_UCX
/*
 * A UCX without patch 0005 lets no transport see a device's async events.
 * Port state events reach every context of a device, so a context of our
 * own gets them as UCX's does; a QP's events go only to the context that
 * created it, UCX's: LAST_WQE_REACHED is not seen here, and re-protection
 * does without it (UCX_RC_VARUNA_LAST_WQE_TIMEOUT), as it must on rxe,
 * which never raises it.
 */
static void uct_rc_varuna_md_own_events(int fd, ucs_event_set_types_t types,
                                        void *arg)
{
    uct_rc_varuna_dev_events_t *events = arg;
    struct ibv_async_event ibv_event;
    uct_ib_async_event_t event;

    while (ibv_get_async_event(events->context, &ibv_event) == 0) {
        if ((ibv_event.event_type == IBV_EVENT_PORT_ERR) ||
            (ibv_event.event_type == IBV_EVENT_PORT_ACTIVE)) {
            event.event_type = ibv_event.event_type;
            event.port_num   = ibv_event.element.port_num;
            uct_rc_varuna_md_event_before(events, &event);
        }
        ibv_ack_async_event(&ibv_event);
    }
}

static ucs_status_t uct_rc_varuna_md_watch(uct_rc_varuna_dev_events_t *events,
                                           uct_ib_device_t *dev)
{
    ucs_status_t status;

    events->context = ibv_open_device(dev->ibv_context->device);
    if (events->context == NULL) {
        ucs_error("rc_varuna: cannot open %s for its port events: %m",
                  uct_ib_device_name(dev));
        return UCS_ERR_IO_ERROR;
    }

    /* the handler reads until there is nothing more */
    status = ucs_sys_fcntl_modfl(events->context->async_fd, O_NONBLOCK, 0);
    if (status == UCS_OK) {
        status = ucs_async_set_event_handler(UCS_ASYNC_THREAD_LOCK_TYPE,
                                             events->context->async_fd,
                                             UCS_EVENT_SET_EVREAD,
                                             uct_rc_varuna_md_own_events,
                                             events, NULL);
    }
    if (status != UCS_OK) {
        ibv_close_device(events->context);
        events->context = NULL;
    }
    return status;
}

static void uct_rc_varuna_md_unwatch(uct_rc_varuna_dev_events_t *events)
{
    ucs_async_remove_handler(events->context->async_fd, 1);
    ibv_close_device(events->context);
    events->context = NULL;
}
#else
/* UCX patch 0005: our callbacks around UCX's own handling of each event */
static ucs_status_t uct_rc_varuna_md_watch(uct_rc_varuna_dev_events_t *events,
                                           uct_ib_device_t *dev)
{
    uct_ib_async_event_watcher_t watcher;

    watcher.before = uct_rc_varuna_md_event_before;
    watcher.after  = uct_rc_varuna_md_event_after;
    watcher.arg    = events;
    return uct_ib_device_async_event_watch(dev, &watcher);
}

static void uct_rc_varuna_md_unwatch(uct_rc_varuna_dev_events_t *events)
{
    uct_ib_device_async_event_unwatch(events->dev);
}
#endif

/* Watch a device's async events (see above), and read the initial state
 * of its ports. */
static ucs_status_t uct_rc_varuna_md_watch_device(uct_rc_varuna_md_t *md,
                                                  unsigned index,
                                                  uct_ib_device_t *dev)
{
    uct_rc_varuna_dev_events_t *events = &md->events[index];
    struct ibv_port_attr port_attr;
    ucs_status_t status;
    uint8_t port;

    events->md    = md;
    events->index = index;
    for (port = dev->first_port; port < dev->first_port + dev->num_ports;
         port++) {
        events->port_down[port] =
                (ibv_query_port(dev->ibv_context, port, &port_attr) != 0) ||
                (port_attr.state != IBV_PORT_ACTIVE);
    }

    status = uct_rc_varuna_md_watch(events, dev);
    if (status == UCS_ERR_UNSUPPORTED) {
        /* the user turned the device's async events off */
        ucs_warn("rc_varuna: %s: UCX_IB_ASYNC_EVENTS=n: port events are not "
                 "seen, a failure is found by failed completions and the "
                 "watchdog only", uct_ib_device_name(dev));
        return UCS_OK;
    } else if (status != UCS_OK) {
        ucs_error("rc_varuna: cannot watch the async events of %s: %s",
                  uct_ib_device_name(dev), ucs_status_string(status));
        return status;
    }

    events->dev = dev;
    return UCS_OK;
}

/* Stop watching: no callback runs once this returns */
static void uct_rc_varuna_md_unwatch_devices(uct_rc_varuna_md_t *md)
{
    unsigned index;

    for (index = 0; index < UCT_RC_VARUNA_NUM_SIDES; index++) {
        if (md->events[index].dev != NULL) {
            uct_rc_varuna_md_unwatch(&md->events[index]);
        }
        md->events[index].dev = NULL;
    }
}

int uct_rc_varuna_md_port_down(uct_rc_varuna_md_t *md, unsigned side,
                               uint8_t port_num)
{
    unsigned index = uct_rc_varuna_md_events_index(md, side);

    return (port_num <= UCT_IB_DEV_MAX_PORTS) &&
           md->events[index].port_down[port_num];
}

static void uct_rc_varuna_md_close(uct_md_h uct_md)
{
    uct_rc_varuna_md_t *md = ucs_derived_of(uct_md, uct_rc_varuna_md_t);

    uct_rc_varuna_md_unwatch_devices(md);
    kh_destroy_inplace(uct_rc_varuna_lwr, &md->lwr);
    ucs_spinlock_destroy(&md->lwr_lock);
    ucs_spinlock_destroy(&md->wakers_lock);

    if (md->standby_md != NULL) {
        uct_md_close(&md->standby_md->super);
    }
    /* frees md itself */
    uct_ib_md_close(&md->super.super);
}

static uct_md_ops_t uct_rc_varuna_md_ops = {
    .close                  = uct_rc_varuna_md_close,
    .query                  = uct_rc_varuna_md_query,
    .mem_alloc              = (uct_md_mem_alloc_func_t)
                                      ucs_empty_function_return_unsupported,
    .mem_free               = (uct_md_mem_free_func_t)
                                      ucs_empty_function_return_unsupported,
    .mem_advise             = (uct_md_mem_advise_func_t)
                                      ucs_empty_function_return_unsupported,
    .mem_reg                = uct_rc_varuna_mem_reg,
    .mem_dereg              = uct_rc_varuna_mem_dereg,
    .mem_query              = (uct_md_mem_query_func_t)
                                      ucs_empty_function_return_unsupported,
    .mkey_pack              = uct_rc_varuna_mkey_pack,
    .is_sockaddr_accessible = (uct_md_is_sockaddr_accessible_func_t)
                                      ucs_empty_function_return_zero_int,
    .detect_memory_type     = (uct_md_detect_memory_type_func_t)
                                      ucs_empty_function_return_unsupported,
};

/* The IB-level operations UCX's close path calls; rc_varuna registers
 * memory itself, so nothing else is ever reached. */
static uct_ib_md_ops_t uct_rc_varuna_ib_md_ops = {
    .cleanup = (uct_ib_md_cleanup_func_t)ucs_empty_function,
};

static struct ibv_device *
uct_rc_varuna_find_device(struct ibv_device **devices, int num,
                          const char *name)
{
    int i;

    for (i = 0; i < num; i++) {
        if (!strcmp(ibv_get_device_name(devices[i]), name)) {
            return devices[i];
        }
    }
    return NULL;
}

/* Build the primary device's uct_ib_md_t inside ours. */
static ucs_status_t
uct_rc_varuna_md_open_primary(uct_rc_varuna_md_t *md,
                              struct ibv_device *ibv_device,
                              const uct_ib_md_config_t *config)
{
    /* direct registration: rc_varuna registers itself, a registration
     * cache would only be created and never used */
    static char *direct[] = {"direct"};
    uct_ib_md_config_t ib_config;
    uct_ib_device_t *dev = &md->super.dev;
    ucs_status_t status;

    dev->ibv_context = ibv_open_device(ibv_device);
    if (dev->ibv_context == NULL) {
        ucs_diag("ibv_open_device(%s) failed: %m",
                 ibv_get_device_name(ibv_device));
        return UCS_ERR_IO_ERROR;
    }

    status = uct_ib_device_query(dev, ibv_device);
    if (status != UCS_OK) {
        goto err_close;
    }

    if (IBV_EXP_HAVE_ATOMIC_HCA(&dev->dev_attr)) {
        dev->atomic_arg_sizes = sizeof(uint64_t);
    }

    md->super.ops              = &uct_rc_varuna_ib_md_ops;
    md->super.memh_struct_size = sizeof(uct_rc_varuna_memh_t);

    ib_config                   = *config;
    ib_config.reg_methods.rmtd  = direct;
    ib_config.reg_methods.count = 1;
    status = uct_ib_md_open_common(&md->super, ibv_device, &ib_config);
    if (status != UCS_OK) {
        goto err_close;
    }

    md->super.dev.flags       = uct_ib_device_spec(dev)->flags;
    md->super.name            = UCT_RC_VARUNA_TL_NAME;
    md->super.super.ops       = &uct_rc_varuna_md_ops;
    md->super.super.component = &uct_rc_varuna_component;
    return UCS_OK;

err_close:
    ibv_close_device(dev->ibv_context);
    return status;
}

static ucs_status_t uct_rc_varuna_md_open(uct_component_t *component,
                                          const char *md_name,
                                          const uct_md_config_t *uct_config,
                                          uct_md_h *md_p)
{
    const uct_rc_varuna_md_config_t *config =
            ucs_derived_of(uct_config, uct_rc_varuna_md_config_t);
    char primary[UCT_MD_NAME_MAX], standby_dev[UCT_DEVICE_NAME_MAX];
    char item[UCT_DEVICE_NAME_MAX + 8];
    struct ibv_device **devices, *ibv_device;
    uct_ib_md_config_t *ib_config;
    const char *standby;
    uct_rc_varuna_md_t *md;
    uct_md_h standby_md;
    uint8_t standby_port;
    ucs_status_t status;
    int num;

    ucs_strncpy_zero(primary, md_name, sizeof(primary));
    standby = strchr(md_name, UCT_RC_VARUNA_MD_NAME_SEP);
    if (standby != NULL) {
        primary[standby - md_name] = '\0';
        standby++;
    }

    uct_rc_varuna_standby_item(config->standby, primary, item, sizeof(item));
    status = uct_rc_varuna_parse_standby(item, standby_dev,
                                         sizeof(standby_dev), &standby_port);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_md_config_read(&uct_ib_component, NULL, NULL,
                                (uct_md_config_t**)&ib_config);
    if (status != UCS_OK) {
        return status;
    }

    devices = ibv_get_device_list(&num);
    if (devices == NULL) {
        status = UCS_ERR_NO_DEVICE;
        goto out_release_config;
    }
    ibv_device = uct_rc_varuna_find_device(devices, num, primary);
    if (ibv_device == NULL) {
        ucs_debug("rc_varuna: device %s not found", primary);
        status = UCS_ERR_NO_DEVICE;
        goto out_free_list;
    }

    md = ucs_calloc(1, sizeof(*md), "rc_varuna_md");
    if (md == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto out_free_list;
    }
    ucs_spinlock_init(&md->lwr_lock, 0);
    kh_init_inplace(uct_rc_varuna_lwr, &md->lwr);
    ucs_spinlock_init(&md->wakers_lock, 0);
    ucs_list_head_init(&md->wakers);
    md->require_standby = config->require_standby;
    md->access_flags    = UCT_RC_VARUNA_ACCESS_FLAGS;
    /* a port given for another device than the standby is not for us */
    md->standby_port    = ((standby != NULL) &&
                           !strcmp(standby_dev, standby)) ? standby_port : 0;

    status = uct_rc_varuna_md_open_primary(md, ibv_device, ib_config);
    if (status != UCS_OK) {
        ucs_free(md);
        goto out_free_list;
    }

    if (standby != NULL) {
        ucs_strncpy_zero(md->standby_dev, standby, sizeof(md->standby_dev));
        if (strcmp(standby, primary)) {
            status = uct_ib_md_open(&uct_ib_component, standby,
                                    &ib_config->super, &standby_md);
            if (status != UCS_OK) {
                ucs_error("rc_varuna: cannot open standby device %s: %s",
                          standby, ucs_status_string(status));
                uct_rc_varuna_md_close(&md->super.super);
                goto out_free_list;
            }
            md->standby_md = ucs_derived_of(standby_md, uct_ib_md_t);
        }
    }

    status = uct_rc_varuna_md_watch_device(md, 0, &md->super.dev);
    if ((status == UCS_OK) && (md->standby_md != NULL)) {
        status = uct_rc_varuna_md_watch_device(md, 1, &md->standby_md->dev);
    }
    if (status != UCS_OK) {
        uct_rc_varuna_md_close(&md->super.super);
        goto out_free_list;
    }

    ucs_debug("rc_varuna: opened memory domain %s", md_name);
    *md_p = &md->super.super;

out_free_list:
    ibv_free_device_list(devices);
out_release_config:
    uct_config_release(ib_config);
    return status;
}

/* Active now: the state the device's async events left, not the one UCX
 * queried when it opened the device */
static int uct_rc_varuna_port_active(uct_rc_varuna_md_t *md, unsigned side,
                                     uct_ib_device_t *dev, uint8_t port)
{
    return (port >= dev->first_port) &&
           (port < dev->first_port + dev->num_ports) &&
           !uct_rc_varuna_md_port_down(md, side, port);
}

/*
 * The standby port of a primary port (DESIGN.md section 3.1): an active one
 * by the rule of UCX_RC_VARUNA_STANDBY, else one that is down now (*up_p
 * says which), so that the interface has a standby side to re-protect onto
 * when the port comes up.
 */
ucs_status_t uct_rc_varuna_md_standby_port(uct_rc_varuna_md_t *md,
                                           uint8_t primary_port,
                                           uint8_t *port_p, int *up_p)
{
    uct_ib_device_t *dev;
    uint8_t port, first;
    int pass;

    if (md->standby_dev[0] == '\0') {
        return UCS_ERR_NO_DEVICE;
    }

    dev = (md->standby_md != NULL) ? &md->standby_md->dev : &md->super.dev;
    if (md->standby_port != 0) {
        port = md->standby_port;
        if (((md->standby_md == NULL) && (port == primary_port)) ||
            (port < dev->first_port) ||
            (port >= dev->first_port + dev->num_ports)) {
            return UCS_ERR_NO_DEVICE;
        }
        *port_p = port;
        *up_p   = uct_rc_varuna_port_active(md, 1, dev, port);
        return UCS_OK;
    }

    /* pass 0 takes only a port that is up; pass 1 one that is down */
    for (pass = 0; pass < 2; pass++) {
        /* another device: the port with the same number first */
        first = ((md->standby_md != NULL) &&
                 (primary_port >= dev->first_port) &&
                 (primary_port < dev->first_port + dev->num_ports)) ?
                primary_port : dev->first_port;
        for (port = first; port < dev->first_port + dev->num_ports; port++) {
            if (((md->standby_md != NULL) || (port != primary_port)) &&
                (pass || uct_rc_varuna_port_active(md, 1, dev, port))) {
                *port_p = port;
                *up_p   = uct_rc_varuna_port_active(md, 1, dev, port);
                return UCS_OK;
            }
        }
        for (port = dev->first_port; port < first; port++) {
            if (((md->standby_md != NULL) || (port != primary_port)) &&
                (pass || uct_rc_varuna_port_active(md, 1, dev, port))) {
                *port_p = port;
                *up_p   = uct_rc_varuna_port_active(md, 1, dev, port);
                return UCS_OK;
            }
        }
    }
    return UCS_ERR_NO_DEVICE;
}

uct_component_t uct_rc_varuna_component = {
    .query_md_resources = uct_rc_varuna_query_md_resources,
    .md_open            = uct_rc_varuna_md_open,
    .cm_open            = (uct_component_cm_open_func_t)
                                  ucs_empty_function_return_unsupported,
    .rkey_unpack        = uct_rc_varuna_rkey_unpack,
    .rkey_ptr           = (uct_component_rkey_ptr_func_t)
                                  ucs_empty_function_return_unsupported,
    .rkey_release       = (uct_component_rkey_release_func_t)
                                  ucs_empty_function_return_success,
    .name               = UCT_RC_VARUNA_TL_NAME,
    .md_config          = {
        .name           = "rc_varuna memory domain",
        .prefix         = "RC_VARUNA_",
        .table          = uct_rc_varuna_md_config_table,
        .size           = sizeof(uct_rc_varuna_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(
                                  &uct_rc_varuna_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)
                                  ucs_empty_function
};
