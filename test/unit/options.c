/*
 * Option parsing (base/options.c, slub/failslab.c, base/debug_opts.c),
 * white box: every numeric option takes decimal digits within 0..max or
 * on/off/yes/no/true/false (USLUB_BACKGROUND_THREAD also auto), nothing
 * else (no white space, no sign, no junk, no overflow); a USLUB_FAILSLAB
 * spec with any bad field is rejected as a whole; USLUB_DEBUG's unknown
 * flags and empty cache names are found; a secure-execution program reads
 * no USLUB_ variable at all.
 */
#include "base/base.h"
#include "slub/failslab.h"
#include "slab/slab.h"
#include "unit.h"
#include <string.h>

#define OPT(n) USLUB_OPT_##n

static const struct {
	enum uslub_option o;
	const char *text;
	bool ok;
	long value;              /* when ok */
	const char *why;         /* a part of the reason, when not ok */
} rows[] = {
	/* plain numbers, bounds */
	{ OPT(DECAY_MS), "0", true, 0, NULL },
	{ OPT(DECAY_MS), "1000", true, 1000, NULL },
	{ OPT(DECAY_MS), "0007", true, 7, NULL },
	{ OPT(DECAY_MS), "86400000", true, 86400000, NULL },
	{ OPT(DECAY_MS), "86400001", false, 0, "out of range (0..86400000)" },
	{ OPT(DECAY_MS), "18446744073709552", false, 0, "out of range" },   /* * 1e6 wraps */
	{ OPT(DECAY_MS), "9223372036854775807", false, 0, "out of range" },
	{ OPT(DECAY_MS), "9223372036854775808", false, 0, "out of range" },
	{ OPT(DECAY_MS), "18446744073709551616", false, 0, "out of range" },
	{ OPT(DECAY_MS), "99999999999999999999999999999999", false, 0, "out of range" },
	{ OPT(DECAY_MS), "-1", false, 0, "out of range" },
	{ OPT(DECAY_MS), "-0", false, 0, "out of range" },
	{ OPT(MAX_ORDER), "9", true, 9, NULL },
	{ OPT(MAX_ORDER), "10", false, 0, "out of range (0..9)" },
	{ OPT(MIN_ORDER), "9", true, 9, NULL },
	{ OPT(MIN_ORDER), "64", false, 0, "out of range (0..9)" },
	{ OPT(MIN_OBJECTS), "32767", true, 32767, NULL },
	{ OPT(MIN_OBJECTS), "32768", false, 0, "out of range" },
	{ OPT(FAKE_NODES), "64", true, 64, NULL },
	{ OPT(FAKE_NODES), "65", false, 0, "out of range (0..64)" },
	{ OPT(PUBLISH_MS), "86400000", true, 86400000, NULL },
	{ OPT(PUBLISH_MS), "4294967296000", false, 0, "out of range" },
	{ OPT(ACCOUNT_BATCH), "1073741824", true, 1073741824, NULL },
	{ OPT(ACCOUNT_BATCH), "1073741825", false, 0, "out of range" },
	{ OPT(VERBOSE), "1", true, 1, NULL },
	{ OPT(VERBOSE), "2", false, 0, "out of range (0..1)" },
	/* words, any case */
	{ OPT(VERBOSE), "on", true, 1, NULL },
	{ OPT(VERBOSE), "ON", true, 1, NULL },
	{ OPT(VERBOSE), "Yes", true, 1, NULL },
	{ OPT(VERBOSE), "TRUE", true, 1, NULL },
	{ OPT(CPU_PARTIAL), "off", true, 0, NULL },
	{ OPT(CPU_PARTIAL), "No", true, 0, NULL },
	{ OPT(CPU_PARTIAL), "fAlSe", true, 0, NULL },
	{ OPT(CPU_PARTIAL), "onn", false, 0, "not a decimal number" },
	{ OPT(CPU_PARTIAL), "o", false, 0, "not a decimal number" },
	{ OPT(CPU_PARTIAL), "y", false, 0, "not a decimal number" },
	{ OPT(DECAY_MS), "on", true, 1, NULL },
	{ OPT(BACKGROUND_THREAD), "auto", true, 2, NULL },
	{ OPT(BACKGROUND_THREAD), "Auto", true, 2, NULL },
	{ OPT(BACKGROUND_THREAD), "on", true, 1, NULL },
	{ OPT(BACKGROUND_THREAD), "3", false, 0, "out of range (0..2)" },
	{ OPT(BACKGROUND_THREAD), "autox", false, 0, "true/false/auto" },
	{ OPT(VERBOSE), "auto", false, 0, "not a decimal number" },
	/* empty, white space, junk */
	{ OPT(DECAY_MS), "", false, 0, "empty value" },
	{ OPT(DECAY_MS), " 5", false, 0, "white space before" },
	{ OPT(DECAY_MS), "\t5", false, 0, "white space before" },
	{ OPT(DECAY_MS), "5 ", false, 0, "white space after" },
	{ OPT(DECAY_MS), "5\n", false, 0, "white space after" },
	{ OPT(DECAY_MS), " ", false, 0, "white space" },
	{ OPT(VERBOSE), " on", false, 0, "white space before" },
	{ OPT(DECAY_MS), "5 5", false, 0, "not a decimal number" },
	{ OPT(DECAY_MS), "+5", false, 0, "not a decimal number" },
	{ OPT(DECAY_MS), "-", false, 0, "not a decimal number" },
	{ OPT(DECAY_MS), "--5", false, 0, "not a decimal number" },
	{ OPT(DECAY_MS), "5ms", false, 0, "not a decimal number" },
	{ OPT(DECAY_MS), "0x10", false, 0, "not a decimal number" },
	{ OPT(DECAY_MS), "1e3", false, 0, "not a decimal number" },
	{ OPT(DECAY_MS), "1.5", false, 0, "not a decimal number" },
	{ OPT(DECAY_MS), "99999999999999999999x", false, 0, "not a decimal number" },
	/* a string option is not numeric */
	{ OPT(REPORT), "5", false, 0, "not a numeric option" },
};

static void test_rows(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		long v = -12345;
		char why[96] = "junk";
		bool ok = _uslub_parse_option(rows[i].o, rows[i].text, &v, why, sizeof(why));
		if (ok != rows[i].ok || (ok && v != rows[i].value) ||
		    (!ok && (v != -12345 || !strstr(why, rows[i].why))) || (ok && why[0])) {
			fprintf(stderr, "%s=\"%s\": got %s value %ld why \"%s\"; want %s %ld \"%s\"\n",
				_uslub_option_name(rows[i].o), rows[i].text, ok ? "accepted" : "rejected",
				v, why, rows[i].ok ? "accepted" : "rejected", rows[i].value,
				rows[i].why ? rows[i].why : "");
			exit(1);
		}
	}
	/* a short reason buffer truncates, never overflows */
	char small[8];
	long v;
	CHECK(!_uslub_parse_option(OPT(DECAY_MS), "x", &v, small, sizeof(small)));
	CHECK_EQ(strlen(small), sizeof(small) - 1);
	CHECK(!_uslub_parse_option(OPT(DECAY_MS), "x", &v, NULL, 0));
}

/* Every bound is what the option's users accept. */
static void test_bounds(void)
{
	CHECK_EQ(_uslub_option_max(OPT(MAX_ORDER)), MAX_PAGE_ORDER);
	CHECK_EQ(_uslub_option_max(OPT(MIN_ORDER)), MAX_PAGE_ORDER);
	CHECK_EQ(_uslub_option_max(OPT(FAKE_NODES)), MAX_NUMNODES);
	CHECK_EQ(_uslub_option_max(OPT(MIN_OBJECTS)), MAX_OBJS_PER_SLAB);
	/* DECAY_MS is multiplied by 1e6 into a uint64 (page.c, kmalloc.c) */
	CHECK((uint64_t)_uslub_option_max(OPT(DECAY_MS)) <= UINT64_MAX / 1000000u);
	for (int i = 0; i < USLUB_NR_OPTIONS; i++) {
		long def = _uslub_option_default((enum uslub_option)i);
		long max = _uslub_option_max((enum uslub_option)i);
		if (def == USLUB_OPT_STRING)
			continue;
		CHECK(max >= 1 && def >= 0 && def <= max);
		/* the maximum itself and the words parse; one more does not */
		char t[32] = "";
		long v;
		_uslub_str_append_long(t, sizeof(t), max);
		CHECK(_uslub_parse_option((enum uslub_option)i, t, &v, NULL, 0) && v == max);
		t[0] = 0;
		_uslub_str_append_long(t, sizeof(t), max + 1);
		CHECK(!_uslub_parse_option((enum uslub_option)i, t, &v, NULL, 0));
		CHECK(_uslub_parse_option((enum uslub_option)i, "off", &v, NULL, 0) && v == 0);
		CHECK(_uslub_parse_option((enum uslub_option)i, "on", &v, NULL, 0) && v == 1);
	}
}

/* The environment: strict values, first occurrence wins, defaults for the
 * rejected, and nothing at all in a secure-execution program. */
static void test_env(void)
{
	char *env[] = {
		"PATH=/bin",
		"USLUB_DECAY_MS=99999999999999999999",
		"USLUB_MAX_ORDER=5",
		"USLUB_MAX_ORDER=7",            /* second: ignored, as getenv */
		"USLUB_VERBOSE=yes",
		"USLUB_CPU_PARTIAL= 0",
		"USLUB_REPORT=/tmp/x",
		"USLUB_FAILSLAB=probability=100",
		"USLUB_DEBUG=T",
		"USLUB_MIN_ORDERX=3",           /* not an option */
		"XUSLUB_MIN_ORDER=3",
		NULL,
	};
	long v[USLUB_NR_OPTIONS];
	const char *str[USLUB_NR_OPTIONS];
	_uslub_options_from_env(env, false, false, v, str);
	CHECK_EQ(v[OPT(DECAY_MS)], 1000);
	CHECK_EQ(v[OPT(MAX_ORDER)], 5);
	CHECK_EQ(v[OPT(VERBOSE)], 1);
	CHECK_EQ(v[OPT(CPU_PARTIAL)], 1);
	CHECK_EQ(v[OPT(MIN_ORDER)], 0);
	CHECK(!strcmp(str[OPT(REPORT)], "/tmp/x"));
	CHECK(!strcmp(str[OPT(FAILSLAB)], "probability=100"));
	CHECK(!strcmp(str[OPT(DEBUG)], "T"));

	/* secure execution: every default, every string empty */
	_uslub_options_from_env(env, true, true, v, str);
	for (int i = 0; i < USLUB_NR_OPTIONS; i++) {
		if (_uslub_option_default((enum uslub_option)i) == USLUB_OPT_STRING)
			CHECK(!strcmp(str[i], ""));
		else
			CHECK_EQ(v[i], _uslub_option_default((enum uslub_option)i));
	}
	/* this test is no set-uid program */
	CHECK(!_uslub_secure_exec());
}

static const struct {
	const char *spec;
	bool ok;
	const char *why;
} fs_rows[] = {
	{ "", true, NULL },
	{ "probability=0", true, NULL },
	{ "probability=100,interval=4,times=-1,space=4096,seed=18446744073709551615,"
	  "ignore-gfp-wait=1,cache-filter=1,verbose=0", true, NULL },
	{ "times=0", true, NULL },
	{ "times=9223372036854775807", true, NULL },
	{ "probability=5,probability=6", true, NULL },
	/* empty values and fields */
	{ "probability=", false, "\"probability\": empty value" },
	{ "probability=5,times=", false, "\"times\": empty value" },
	{ "seed=", false, "\"seed\": empty value" },
	{ "probability=5,", false, "empty field" },
	{ ",probability=5", false, "empty field" },
	{ "probability=5,,times=1", false, "empty field" },
	{ ",", false, "empty field" },
	/* junk */
	{ "probability", false, "not key=value" },
	{ "=5", false, "unknown key" },
	{ "probability=5x", false, "\"probability\": not a decimal number" },
	{ "probability= 5", false, "not a decimal number" },
	{ "probability=5 ", false, "not a decimal number" },
	{ " probability=5", false, "unknown key" },
	{ "probability=+5", false, "not a decimal number" },
	{ "probability=0x10", false, "not a decimal number" },
	{ "times=x", false, "\"times\": not a decimal number or -1" },
	{ "times=-2", false, "not a decimal number or -1" },
	{ "times=--1", false, "not a decimal number or -1" },
	{ "space=-1", false, "not a decimal number" },
	/* ranges and overflow */
	{ "probability=101", false, "\"probability\": out of range (0..100)" },
	{ "probability=18446744073709551716", false, "out of range (0..100)" },
	{ "interval=0", false, "\"interval\": out of range (1..9223372036854775807)" },
	{ "interval=9223372036854775808", false, "out of range" },
	{ "times=9223372036854775808", false, "\"times\": out of range (-1..9223372036854775807)" },
	{ "space=99999999999999999999", false, "out of range" },
	{ "seed=18446744073709551616", false, "\"seed\": out of range" },
	{ "ignore-gfp-wait=2", false, "out of range (0..1)" },
	{ "cache-filter=2", false, "out of range (0..1)" },
	{ "verbose=10", false, "out of range (0..1)" },
	/* unknown keys */
	{ "bogus=1", false, "\"bogus\": unknown key" },
	{ "probability=5,Probability=5", false, "\"Probability\": unknown key" },
	{ "prob=5", false, "unknown key" },
	{ "probabilityprobabilityprobabilityprobability=5", false, "...\": unknown key" },
};

static void test_failslab(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(fs_rows); i++) {
		struct failslab a = { .probability = 77 };
		char why[160] = "junk";
		bool ok = _uslub_failslab_parse(fs_rows[i].spec, &a, why, sizeof(why));
		if (ok != fs_rows[i].ok || (!ok && (!strstr(why, fs_rows[i].why) ||
						    a.probability != 77)) || (ok && why[0])) {
			fprintf(stderr, "failslab \"%s\": got %s \"%s\"; want %s \"%s\"\n",
				fs_rows[i].spec, ok ? "accepted" : "rejected", why,
				fs_rows[i].ok ? "accepted" : "rejected",
				fs_rows[i].why ? fs_rows[i].why : "");
			exit(1);
		}
	}
	struct failslab a;
	char why[160];
	CHECK(_uslub_failslab_parse("probability=100,interval=4,times=-1,space=4096,"
				    "seed=18446744073709551615,ignore-gfp-wait=1,cache-filter=1,"
				    "verbose=1", &a, why, sizeof(why)));
	CHECK_EQ(a.probability, 100);
	CHECK_EQ(a.interval, 4);
	CHECK_EQ(a.times, -1);
	CHECK_EQ(a.space, 4096);
	CHECK(a.seed == UINT64_MAX);
	CHECK(a.ignore_gfp_wait == 1 && a.cache_filter == 1 && a.verbose == 1);
	CHECK(_uslub_failslab_parse("times=3,probability=5,probability=6", &a, why, sizeof(why)));
	CHECK_EQ(a.times, 3);
	CHECK_EQ(a.probability, 6);
	CHECK_EQ(a.interval, 1);           /* the defaults for the rest */
	CHECK(_uslub_failslab_parse("", &a, why, sizeof(why)));
	CHECK_EQ(a.probability, 0);
	CHECK_EQ(a.times, -1);
	CHECK(!_uslub_failslab_parse(NULL, &a, why, sizeof(why)));
}

static void test_debug(void)
{
	char why[128];
	static const char *good[] = { "", "F", "FZPU", "-", ",dentry", "FZ,a,b*", "T;A,x;-,y",
				      "F, a ,b", "fz;", "F,*" };
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		if (!_uslub_debug_check(good[i], why, sizeof(why))) {
			fprintf(stderr, "USLUB_DEBUG=\"%s\" rejected: %s\n", good[i], why);
			exit(1);
		}
	CHECK(_uslub_debug_check(NULL, why, sizeof(why)));
	static const struct { const char *spec, *why; } bad[] = {
		{ "FQ", "unknown flag 'Q'" },
		{ "F;Z,x;?", "unknown flag '?'" },
		{ "F,,x", "empty cache name" },
		{ "F,x,", "empty cache name" },
		{ "F,", "empty cache name" },
		{ "F, ,x", "empty cache name" },
		{ "F,x;Z,", "empty cache name" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (_uslub_debug_check(bad[i].spec, why, sizeof(why)) || !strstr(why, bad[i].why)) {
			fprintf(stderr, "USLUB_DEBUG=\"%s\": want \"%s\", got \"%s\"\n", bad[i].spec,
				bad[i].why, why);
			exit(1);
		}
	/* what is ignored stays ignored */
	CHECK_EQ(_uslub_debug_flags("FQ", "x"), USLUB_DBG_F);
	CHECK_EQ(_uslub_debug_flags("F,,x", "x"), USLUB_DBG_F);
	CHECK_EQ(_uslub_debug_flags("F,,x", ""), 0);
	/* what the README says of empty: an empty or unset USLUB_DEBUG is no
	 * debugging; an empty flag field in a block is F Z P U */
	CHECK_EQ(_uslub_debug_flags("", "x"), 0);
	CHECK_EQ(_uslub_debug_flags(NULL, "x"), 0);
	CHECK_EQ(_uslub_debug_flags(";", "x"), USLUB_DBG_DEFAULT);
	CHECK_EQ(_uslub_debug_flags(",x", "x"), USLUB_DBG_DEFAULT);
	CHECK_EQ(_uslub_debug_flags(",x", "y"), 0);
	CHECK_EQ(_uslub_debug_flags("X", "y"), USLUB_DBG_X);
}

static void test_str(void)
{
	char b[8] = "";
	_uslub_str_append(b, sizeof(b), "abc");
	_uslub_str_append_long(b, sizeof(b), -42);
	CHECK(!strcmp(b, "abc-42"));
	_uslub_str_append_u64(b, sizeof(b), 12345);
	CHECK(!strcmp(b, "abc-421"));
	char c[24] = "";
	_uslub_str_append_u64(c, sizeof(c), UINT64_MAX);
	CHECK(!strcmp(c, "18446744073709551615"));
	uint64_t v;
	CHECK_EQ(_uslub_parse_u64("18446744073709551615", 20, UINT64_MAX, &v), 0);
	CHECK(v == UINT64_MAX);
	CHECK_EQ(_uslub_parse_u64("18446744073709551616", 20, UINT64_MAX, &v), USLUB_NUM_RANGE);
	CHECK_EQ(_uslub_parse_u64("12", 0, 100, &v), USLUB_NUM_EMPTY);
	CHECK_EQ(_uslub_parse_u64("12", 1, 100, &v), 0);     /* a length, not a string */
	CHECK_EQ(v, 1);
}

int main(void)
{
	test_rows();
	test_bounds();
	test_env();
	test_failslab();
	test_debug();
	test_str();
	printf("options: %zu option rows, %zu failslab rows\n", ARRAY_SIZE(rows),
	       ARRAY_SIZE(fs_rows));
	return 0;
}
