/* Built when libmicrohttpd is absent: the endpoint is reported unavailable. */
#include <stdio.h>

#include "web/server.h"

acl_web_t *acl_web_start(const char *bind_addr, int port, const acl_web_source_t *src, char *err,
                         size_t errlen)
{
  (void)bind_addr;
  (void)port;
  (void)src;
  snprintf(err, errlen, "built without libmicrohttpd (meson -Dweb=enabled)");
  return NULL;
}
int acl_web_port(const acl_web_t *w)
{
  (void)w;
  return -1;
}
void acl_web_publish(acl_web_t *w, const char *event, const char *json)
{
  (void)w;
  (void)event;
  (void)json;
}
void acl_web_stop(acl_web_t *w) { (void)w; }
