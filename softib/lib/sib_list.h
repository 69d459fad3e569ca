/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Intrusive circular doubly-linked list.
 */
#ifndef SIB_LIST_H
#define SIB_LIST_H

struct sib_list {
    struct sib_list *next;
    struct sib_list *prev;
};

static inline void sib_list_init(struct sib_list *head)
{
    head->next = head->prev = head;
}

static inline int sib_list_empty(const struct sib_list *head)
{
    return head->next == head;
}

static inline void sib_list_add_tail(struct sib_list *head,
                                     struct sib_list *node)
{
    node->prev       = head->prev;
    node->next       = head;
    head->prev->next = node;
    head->prev       = node;
}

static inline void sib_list_del(struct sib_list *node)
{
    node->prev->next = node->next;
    node->next->prev = node->prev;
    node->next = node->prev = node;
}

#define sib_list_entry(_node, _type, _member) \
    container_of(_node, _type, _member)

#endif
