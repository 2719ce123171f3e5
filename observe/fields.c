/* The field table (observe/fields.def) as data. */
#include "observe/observe.h"

const acl_field_info_t acl_fields[ACL_F_COUNT] = {
#define ACL_FIELD(ID, OBJ, KEY, METRIC, TYPE, HELP)                                                \
  [ACL_F_##ID] = {KEY,                                                                             \
                  METRIC,                                                                          \
                  ACL_MT_##TYPE,                                                                   \
                  HELP,                                                                            \
                  "\"" KEY "\": ",                                                                 \
                  ", \"" KEY "\": ",                                                               \
                  sizeof("\"" KEY "\": ") - 1,                                                     \
                  sizeof(", \"" KEY "\": ") - 1},
#include "observe/fields.def"
#undef ACL_FIELD
};

const char *acl_metric_type_name(acl_metric_type_t t)
{
  static const char *const n[] = {"", "gauge", "counter", "histogram"};
  return (unsigned)t < sizeof(n) / sizeof(n[0]) ? n[t] : "";
}
