/* Prints core/settings.def as the program sees it, one row a line, fields
 * separated by tabs: name, type, default, range, accepted, unit, reader, doc.
 * scripts/check-settings.py turns it into README.md's table and checks the
 * README and the sources against it. */
#include <stdio.h>
#include <string.h>

#include "core/config.h"

static const char *const type_names[] = {"enum", "int", "string", "bytes", "flag"};

int main(void)
{
  for (size_t i = 0; i < acl_nsettings; i++) {
    const acl_setting_t *s = &acl_settings[i];
    char dflt[256], accepted[256], range[256] = "";
    acl_setting_default(s, dflt, sizeof(dflt));
    acl_setting_accepted(s, accepted, sizeof(accepted));
    size_t n = 0;
    if (s->type == ACL_SETTING_ENUM)
      for (int c = 0; s->choices[c] && n < sizeof(range); c++)
        n += (size_t)snprintf(range + n, sizeof(range) - n, "%s%s", c ? "|" : "", s->choices[c]);
    else if (s->type == ACL_SETTING_INT || s->type == ACL_SETTING_BYTES)
      snprintf(range, sizeof(range), "%lld..%lld", s->lo, s->hi);
    printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s->name, type_names[s->type], dflt, range, accepted,
           s->unit, s->reader, s->doc);
  }
  return 0;
}
