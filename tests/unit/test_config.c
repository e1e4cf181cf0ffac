/*
 * test_config.c - the knob table: defaults, valid and invalid values (which
 * must be rejected with a message and change nothing), unknown names.
 */
#define _GNU_SOURCE
#include "check.h"
#include "util/config.h"
#include "util/log.h"

#include <stdlib.h>

int main(void)
{
    tc_config_t cfg, before;
    char err[256];
    const tc_config_t *live;

    tc__config_defaults(&cfg);
    CHECK_EQ(cfg.log_level, TC_LOG_WARN);
    CHECK_EQ(cfg.idle_poll_ms, 20);
    CHECK_EQ(cfg.backoff_max_us, 200);
    CHECK_EQ(cfg.proxy_cpus[0], '\0');

    CHECK_EQ(tc__config_parse_one(&cfg, "TCOLL_LOG_LEVEL", "DEBUG", err, sizeof(err)), 0);
    CHECK_EQ(cfg.log_level, TC_LOG_DEBUG);
    CHECK_EQ(tc__config_parse_one(&cfg, "TCOLL_IDLE_POLL_MS", "5", err, sizeof(err)), 0);
    CHECK_EQ(cfg.idle_poll_ms, 5);
    CHECK_EQ(tc__config_parse_one(&cfg, "TCOLL_PROXY_CPUS", "0-3,8", err, sizeof(err)), 0);
    CHECK(strcmp(cfg.proxy_cpus, "0-3,8") == 0);

    before = cfg;
    {
        const char *bad[][2] = {
            {"TCOLL_LOG_LEVEL", "loud"},  {"TCOLL_IDLE_POLL_MS", "0"},
            {"TCOLL_IDLE_POLL_MS", "12x"}, {"TCOLL_IDLE_POLL_MS", ""},
            {"TCOLL_SPIN", "-1"},          {"TCOLL_BACKOFF_MAX_US", "99999999999999999999"},
            {"TCOLL_NO_SUCH_KNOB", "1"},
        };
        size_t i;
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            err[0] = '\0';
            CHECK_EQ(tc__config_parse_one(&cfg, bad[i][0], bad[i][1], err, sizeof(err)), -1);
            CHECK_STR_CONTAINS(err, bad[i][0]);
            CHECK(memcmp(&cfg, &before, sizeof(cfg)) == 0);
        }
    }
    {
        char longval[400];
        memset(longval, '1', sizeof(longval) - 1);
        longval[sizeof(longval) - 1] = '\0';
        CHECK_EQ(tc__config_parse_one(&cfg, "TCOLL_PROXY_CPUS", longval, err, sizeof(err)), -1);
        CHECK(memcmp(&cfg, &before, sizeof(cfg)) == 0);
    }

    /* The environment loader: a bad value keeps the default. */
    setenv("TCOLL_IDLE_POLL_MS", "not-a-number", 1);
    setenv("TCOLL_SPIN", "7", 1);
    setenv("TCOLL_LOG_LEVEL", "error", 1);
    setenv("TCOLL_TYPO_KNOB", "1", 1);
    live = tc__config();
    CHECK_EQ(live->idle_poll_ms, 20);
    CHECK_EQ(live->spin, 7);
    CHECK_EQ(live->log_level, TC_LOG_ERROR);
    CHECK(tc__config() == live);
    tc__config_print(stdout, NULL);

    /* Every knob in the table is documented in the README. */
    {
        char table[8192], *line, *save = NULL;
        FILE *mem = fmemopen(table, sizeof(table), "w");
        FILE *readme = fopen(TCOLL_SOURCE_DIR "/README.md", "r");
        static char text[1 << 17];
        size_t n;
        CHECK(mem != NULL && readme != NULL);
        tc__config_print(mem, NULL);
        fclose(mem);
        n = fread(text, 1, sizeof(text) - 1, readme);
        text[n] = '\0';
        fclose(readme);
        for (line = strtok_r(table, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
            char name[64];
            CHECK_EQ(sscanf(line, "| `%63[A-Z0-9_]`", name), 1);
            CHECK_MSG(strstr(text, name) != NULL, "README.md does not document %s", name);
        }
    }
    printf("test_config: ok\n");
    return 0;
}
