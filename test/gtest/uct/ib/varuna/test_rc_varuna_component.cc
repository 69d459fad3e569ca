/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#include <common/test.h>

extern "C" {
#include <uct/api/uct.h>
}

#include <infiniband/verbs.h>
#include <dlfcn.h>
#include <string.h>
#include <libgen.h>
#include <set>
#include <string>
#include <vector>


/*
 * rc_varuna registers its own UCT component from a UCX module (DESIGN.md
 * section 3.1). These tests check that UCT finds it the way applications do:
 * through uct_query_components(), which loads the modules of uct_MODULES.
 */
class test_rc_varuna_component : public ucs::test {
protected:
    static const char *component_name()
    {
        return "rc_varuna";
    }

    /* Components named rc_varuna among all the components UCT lists */
    static std::vector<uct_component_h> find_components()
    {
        std::vector<uct_component_h> found;
        uct_component_h *components;
        unsigned num_components;

        ASSERT_UCS_OK(uct_query_components(&components, &num_components));
        ucs::handle<uct_component_h*> components_h(components,
                                                   uct_release_component_list);

        for (unsigned i = 0; i < num_components; ++i) {
            uct_component_attr_t attr = {};

            attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
            ASSERT_UCS_OK(uct_component_query(components[i], &attr));
            if (!strcmp(attr.name, component_name())) {
                found.push_back(components[i]);
            }
        }

        return found;
    }
};


UCS_TEST_F(test_rc_varuna_component, registered_once) {
    EXPECT_EQ(1ul, find_components().size());
}

UCS_TEST_F(test_rc_varuna_component, provided_by_module) {
    std::vector<uct_component_h> components = find_components();
    ASSERT_EQ(1ul, components.size());

    /* The component must come from the loadable module, not be linked into
     * the test binary or into libuct_ib */
    Dl_info info;
    ASSERT_NE(0, dladdr(components[0], &info));
    ASSERT_TRUE(info.dli_fname != NULL);

    std::string path(info.dli_fname);
    std::string file(basename(&path[0]));
    EXPECT_EQ(0u, file.find("libuct_varuna.so")) << info.dli_fname;
}

/* Memory domain names say the pairing (DESIGN.md section 3.1): "dev+dev"
 * for a standby device, "dev+dev" with the same device twice for a standby
 * port of the same device, "dev" without a standby. */
UCS_TEST_F(test_rc_varuna_component, md_names_name_ib_devices) {
    std::vector<uct_component_h> components = find_components();
    ASSERT_EQ(1ul, components.size());

    uct_component_attr_t attr = {};
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT |
                      UCT_COMPONENT_ATTR_FIELD_FLAGS;
    ASSERT_UCS_OK(uct_component_query(components[0], &attr));
    EXPECT_EQ(0ul, attr.flags & UCT_COMPONENT_FLAG_CM);
    if (attr.md_resource_count == 0) {
        UCS_TEST_SKIP_R("no RDMA device with an active port");
    }

    std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
    attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = &mds[0];
    ASSERT_UCS_OK(uct_component_query(components[0], &attr));

    int num_devices;
    struct ibv_device **devices = ibv_get_device_list(&num_devices);
    ASSERT_TRUE(devices != NULL);
    std::set<std::string> names;
    for (int i = 0; i < num_devices; ++i) {
        names.insert(ibv_get_device_name(devices[i]));
    }
    ibv_free_device_list(devices);

    for (size_t i = 0; i < mds.size(); ++i) {
        std::string name(mds[i].md_name);
        size_t plus = name.find('+');

        UCS_TEST_MESSAGE << name;
        EXPECT_TRUE(names.count(name.substr(0, plus)) != 0) << name;
        if (plus != std::string::npos) {
            EXPECT_TRUE(names.count(name.substr(plus + 1)) != 0) << name;
        }
    }
}
