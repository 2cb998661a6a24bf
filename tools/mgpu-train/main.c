/*
 * mgpu-train - train a model on one device (CPU rank or GPU).
 *
 * Options resolve into a struct mgpu_train_cfg; the same option table also
 * renders the resolved settings back to an argv, saved in checkpoints so
 * --resume restores them (settings that shape the run may not be changed on
 * resume, since the continuation must be bit-identical; --epochs may, to
 * extend a run, which then says that it is not).
 */
#include <ctype.h>   /* isspace */
#include <errno.h>   /* errno, EPIPE */
#include <getopt.h>  /* getopt_long */
#include <math.h>    /* fabs, fmax */
#include <stdio.h>   /* printf */
#include <stdlib.h>  /* free */
#include <string.h>  /* strcmp, strerror */
#include <unistd.h>  /* isatty */

#include "../common.h"     /* die, usage_error */
#include "core/cli.h"      /* mgpu_cli_int_list */
#include "core/clock.h"    /* mgpu_now_s */
#include "core/table.h"    /* struct mgpu_table */
#include "comm/launch.h"   /* mgpu_launch_env, mgpu_launch_run */
#include "gpu/gpu.h"       /* mgpu_gpu_enumerate, mgpu_gpu_resolve */
#include "nn/ckpt.h"       /* mgpu_ckpt_load_state */
#include "nn/sync.h"       /* mgpu_sync_name */
#include "nn/train.h"      /* mgpu_train_run */
#include "ops/check.h"     /* mgpu_ops_compare */
#include "core/hash.h"     /* mgpu_hash64 */

const char *const mgpu_tool_name = "mgpu-train";

enum {
	O_DATA = 256, O_MODEL, O_EPOCHS, O_MAX_STEPS, O_BATCH, O_LR, O_MIN_LR, O_OPT,
	O_MOMENTUM, O_NESTEROV, O_WD, O_BETA1, O_BETA2, O_EPS, O_CLIP, O_SCHED,
	O_WARMUP_STEPS, O_WARMUP_EPOCHS, O_STEP_EPOCHS, O_GAMMA, O_SEED, O_VAL,
	O_CPU_RANKS, O_GPUS, O_BACKEND, O_SAVE_DIR, O_SAVE_EVERY, O_KEEP, O_RESUME,
	O_JSON, O_LOG_EVERY, O_MODE, O_SYNC, O_ACCUM, O_GLOBAL_BATCH, O_LR_SCALE, O_UNEVEN,
	O_TIMEOUT, O_PREFETCH, O_CPU_FALLBACK, O_SELFTEST,
};

static const struct option longopts[] = {
	{ "data", required_argument, NULL, O_DATA },
	{ "model", required_argument, NULL, O_MODEL },
	{ "epochs", required_argument, NULL, O_EPOCHS },
	{ "max-steps", required_argument, NULL, O_MAX_STEPS },
	{ "batch-size", required_argument, NULL, O_BATCH },
	{ "lr", required_argument, NULL, O_LR },
	{ "min-lr", required_argument, NULL, O_MIN_LR },
	{ "optimizer", required_argument, NULL, O_OPT },
	{ "momentum", required_argument, NULL, O_MOMENTUM },
	{ "nesterov", no_argument, NULL, O_NESTEROV },
	{ "weight-decay", required_argument, NULL, O_WD },
	{ "beta1", required_argument, NULL, O_BETA1 },
	{ "beta2", required_argument, NULL, O_BETA2 },
	{ "eps", required_argument, NULL, O_EPS },
	{ "clip-grad-norm", required_argument, NULL, O_CLIP },
	{ "schedule", required_argument, NULL, O_SCHED },
	{ "warmup-steps", required_argument, NULL, O_WARMUP_STEPS },
	{ "warmup-epochs", required_argument, NULL, O_WARMUP_EPOCHS },
	{ "step-epochs", required_argument, NULL, O_STEP_EPOCHS },
	{ "gamma", required_argument, NULL, O_GAMMA },
	{ "seed", required_argument, NULL, O_SEED },
	{ "val-fraction", required_argument, NULL, O_VAL },
	{ "cpu-ranks", required_argument, NULL, O_CPU_RANKS },
	{ "gpus", required_argument, NULL, O_GPUS },
	{ "cpu-fallback", required_argument, NULL, O_CPU_FALLBACK },
	{ "backend", required_argument, NULL, O_BACKEND },
	{ "save-dir", required_argument, NULL, O_SAVE_DIR },
	{ "save-every", required_argument, NULL, O_SAVE_EVERY },
	{ "keep", required_argument, NULL, O_KEEP },
	{ "resume", required_argument, NULL, O_RESUME },
	{ "json", no_argument, NULL, O_JSON },
	{ "log-every", required_argument, NULL, O_LOG_EVERY },
	{ "mode", required_argument, NULL, O_MODE },
	{ "sync-backend", required_argument, NULL, O_SYNC },
	{ "grad-accum-steps", required_argument, NULL, O_ACCUM },
	{ "global-batch-size", required_argument, NULL, O_GLOBAL_BATCH },
	{ "lr-scale", required_argument, NULL, O_LR_SCALE },
	{ "uneven", required_argument, NULL, O_UNEVEN },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ "prefetch", required_argument, NULL, O_PREFETCH },
	{ "selftest", no_argument, NULL, O_SELFTEST },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* Options that shape the arithmetic: a resumed run must keep them. The
 * batch split (per-device batch, accumulation) may change with the world
 * size as long as the global batch stays; the trainer checks that. Epochs
 * may change too, to extend a run (see resume_span). */
static const int identity_opts[] = {
	O_MODEL, O_LR, O_MIN_LR, O_OPT, O_MOMENTUM, O_NESTEROV, O_WD,
	O_BETA1, O_BETA2, O_EPS, O_CLIP, O_SCHED, O_WARMUP_STEPS, O_WARMUP_EPOCHS,
	O_STEP_EPOCHS, O_GAMMA, O_SEED, O_VAL, O_LR_SCALE, O_UNEVEN, 0,
};

/* What a checkpoint records: the above plus the batch split. */
static const int saved_opts[] = {
	O_MODEL, O_EPOCHS, O_BATCH, O_ACCUM, O_LR, O_MIN_LR, O_OPT, O_MOMENTUM, O_NESTEROV,
	O_WD, O_BETA1, O_BETA2, O_EPS, O_CLIP, O_SCHED, O_WARMUP_STEPS, O_WARMUP_EPOCHS,
	O_STEP_EPOCHS, O_GAMMA, O_SEED, O_VAL, O_LR_SCALE, O_UNEVEN, 0,
};

static const char *const opt_words[] = { "sgd", "adamw", NULL };
static const char *const sched_words[] = { "constant", "cosine", "step", NULL };
static const char *const mode_words[] = { "ddp", "dp", NULL };
static const char *const sync_words[] = { "auto", "cpu", "nccl", NULL };
static const char *const scale_words[] = { "none", "linear", "sqrt", NULL };
static const char *const uneven_words[] = { "drop", "pad", NULL };

struct opts {
	struct mgpu_train_cfg cfg;
	int json, quiet, verbose, selftest, version;
	int cpu_ranks;                  /* 0: not given */
	const char *gpus;               /* --gpus as given */
	int cpu_fallback;               /* CPU ranks when --gpus finds none; 0: fail */
	int sync_auto;
	long long global_batch;         /* 0: not given */
	char set[O_SELFTEST + 1];       /* options given on the command line */
	char resume_note[256];          /* said when training starts, or "" */
};

static void usage(void)
{
	printf("usage: mgpu-train [options]\n"
	       "Train a model data-parallel; metrics go to stdout as TSV (or JSON Lines).\n\n"
	       "data and model:\n"
	       "  --data PATH           a cache (mgpu-cache), a shard manifest or archive,\n"
	       "                        or an IDX directory [/usr/share/datasets/fashion-mnist]\n"
	       "  --prefetch N          background threads loading batches ahead [0]\n"
	       "  --model SPEC|FILE     mlp:784-512-256-10[,act=relu|gelu|tanh][,dropout=P][,layernorm]\n"
	       "  --seed N              seed of init, split, order, dropout [42]\n"
	       "  --val-fraction F      validation share of the training file [0.1]\n"
	       "training:\n"
	       "  --epochs N [10]   --max-steps N [0: none]   --batch-size N (per device) [128]\n"
	       "  --optimizer sgd|adamw [sgd]   --lr X [0.05]   --momentum X [0.9]   --nesterov\n"
	       "  --weight-decay X [0]   --beta1 X [0.9]   --beta2 X [0.999]   --eps X [1e-8]\n"
	       "  --clip-grad-norm X [0: off]\n"
	       "  --schedule constant|cosine|step [cosine]   --min-lr X [0]\n"
	       "  --warmup-steps N | --warmup-epochs X [0]   --step-epochs X [3]   --gamma X [0.1]\n"
	       "  --grad-accum-steps N [1]   --global-batch-size N (split over devices)\n"
	       "  --lr-scale none|linear|sqrt (with devices x accumulation) [none]\n"
	       "devices and data parallelism:\n"
	       "  --cpu-ranks N         CPU ranks [1]\n"
	       "  --gpus LIST|all|auto|-  CUDA devices, one rank each (0,1; auto: as mgpu-probe\n"
	       "                        selects; -: the list from standard input)\n"
	       "  --cpu-fallback N      with --gpus - or auto: N CPU ranks when there is no GPU\n"
	       "  --backend ref|cpu|cuda  backend of the devices [cpu, or cuda with --gpus]\n"
	       "  --mode ddp|dp         process per device, or DataParallel threads [ddp]\n"
	       "  --sync-backend auto|cpu|nccl  gradient all-reduce [auto]\n"
	       "  --uneven drop|pad     the epoch's last partial global batch [drop]\n"
	       "  --timeout SECONDS     a silent rank fails the job after this [300]\n"
	       "checkpoints:\n"
	       "  --save-dir DIR   --save-every N (steps; 0: each epoch) [0]   --keep N [3]\n"
	       "  --resume DIR          continue from DIR/latest or a checkpoint directory\n"
	       "output:\n"
	       "  --json   --log-every N [50]   -q, --quiet   -v, --verbose\n"
	       "  --selftest            compare every backend op against the CPU and exit\n"
	       "  -h, --help   -V, --version\n");
}

static void set_path(char *dst, const char *opt, const char *arg)
{
	if (strlen(arg) >= MGPU_PATH_MAX || !arg[0])
		usage_error("%s: bad path '%s'", opt, arg);
	strcpy(dst, arg);
}

static void set_gpus(struct opts *o, const char *arg)
{
	o->gpus = arg;
	o->cfg.ndevices = 1; /* resolved to the real list in resolve_gpus() */
	snprintf(o->cfg.backend, sizeof o->cfg.backend, "cuda");
}

/* No GPU to train on, and --cpu-fallback N: N CPU ranks instead (why:
 * the message, NULL in the ranks, which learn it from an empty MGPU_GPUS). */
static void fall_back(struct opts *o, const char *why)
{
	if (why && !o->quiet)
		warn("%s: falling back to %d CPU rank%s (--cpu-fallback)", why, o->cpu_fallback,
		     o->cpu_fallback > 1 ? "s" : "");
	setenv("MGPU_GPUS", "", 1);
	o->gpus = NULL;
	o->cfg.ndevices = 0;
	o->cpu_ranks = o->cpu_fallback;
	snprintf(o->cfg.backend, sizeof o->cfg.backend, "cpu");
}

/* Standard input for --gpus - read whole here, so that an empty one (what
 * `mgpu-probe --ids` prints when no GPU is eligible) can fall back: 1 when
 * it holds nothing but white space, else 0 and *in reads it again. */
static int stdin_blank(char *buf, size_t cap, FILE **in)
{
	size_t n = fread(buf, 1, cap, stdin), i;

	if (ferror(stdin))
		die("--gpus -: cannot read standard input: %s", strerror(errno));
	for (i = 0; i < n && isspace((unsigned char)buf[i]); i++)
		;
	if (i == n)
		return 1;
	*in = fmemopen(buf, n, "r");
	if (!*in)
		die("--gpus -: cannot read standard input: %s", strerror(errno));
	return 0;
}

static int gpus_is(const struct opts *o, const char *word)
{
	return o->gpus && strcmp(o->gpus, word) == 0;
}

/* --gpus LIST|all|auto|- through the selection rules mgpu-probe uses. The
 * ranks mgpu-train starts get the resolved list in MGPU_GPUS, so `-` reads
 * standard input once, in the launcher. */
static void resolve_gpus(struct opts *o)
{
	const char *given = getenv("MGPU_LAUNCHED") ? getenv("MGPU_GPUS") : NULL;
	static char input[8192];
	struct mgpu_gpu_list list;
	FILE *in = stdin;
	int rc, i;
	char buf[8 * MGPU_MAX_DEVICES] = "";
	size_t len = 0;

	if (o->gpus && o->cpu_ranks)
		usage_error("--cpu-ranks and --gpus exclude each other");
	if (o->cpu_fallback && !gpus_is(o, "-") && !gpus_is(o, "auto"))
		usage_error("--cpu-fallback needs --gpus - or --gpus auto");
	if (!o->gpus)
		return;
	if (given) {
		if (!given[0])
			fall_back(o, NULL);
		else if (mgpu_cli_int_list("MGPU_GPUS", given, o->cfg.devices, MGPU_MAX_DEVICES,
					   &o->cfg.ndevices) < 0)
			die_lib();
		return;
	}
	if (o->cpu_fallback && gpus_is(o, "-") && stdin_blank(input, sizeof input, &in)) {
		fall_back(o, "--gpus -: no GPU ids on standard input");
		return;
	}
	rc = mgpu_gpu_enumerate(&list);
	if (rc == 0)
		rc = mgpu_gpu_resolve(o->gpus, in, &list, NULL, o->cfg.devices,
				      MGPU_MAX_DEVICES, &o->cfg.ndevices);
	if (in != stdin)
		fclose(in);
	/* auto finding no eligible GPU (or none at all) */
	if (rc == MGPU_ERANGE && o->cpu_fallback && gpus_is(o, "auto")) {
		fall_back(o, mgpu_errmsg());
		return;
	}
	if (rc == MGPU_EINVAL)
		usage_error("%s", mgpu_errmsg());
	if (rc < 0)
		die_lib();
	for (i = 0; i < o->cfg.ndevices; i++)
		len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%d", i ? "," : "",
					o->cfg.devices[i]);
	setenv("MGPU_GPUS", buf, 1);
}

static void set_backend(struct opts *o, const char *arg)
{
	if (!mgpu_ops_find(arg))
		usage_error("--backend: '%s' is not in this build (see mgpu-train -vV)", arg);
	snprintf(o->cfg.backend, sizeof o->cfg.backend, "%s", arg);
}

static void apply_core(struct opts *o, int c, const char *arg)
{
	struct mgpu_train_cfg *g = &o->cfg;

	switch (c) {
	case O_DATA: set_path(g->data, "--data", arg); break;
	case O_MODEL:
		if (mgpu_spec_load(&g->spec, arg) < 0)
			usage_error("%s", mgpu_errmsg());
		break;
	case O_EPOCHS: g->epochs = (int)opt_int("--epochs", arg, 1, 1000000); break;
	case O_MAX_STEPS: g->max_steps = opt_int("--max-steps", arg, 0, INT64_MAX); break;
	case O_BATCH: g->batch = (int)opt_int("--batch-size", arg, 1, 1 << 20); break;
	case O_LR: g->lr = opt_double("--lr", arg, 0, 1e6); break;
	case O_MIN_LR: g->min_lr = opt_double("--min-lr", arg, 0, 1e6); break;
	case O_OPT: g->optim.kind = opt_choice("--optimizer", arg, opt_words); break;
	case O_MOMENTUM: g->optim.momentum = (float)opt_double("--momentum", arg, 0, 0.999999); break;
	case O_NESTEROV: g->optim.nesterov = 1; break;
	case O_WD: g->optim.weight_decay = (float)opt_double("--weight-decay", arg, 0, 1e3); break;
	case O_BETA1: g->optim.beta1 = (float)opt_double("--beta1", arg, 0, 0.999999); break;
	case O_BETA2: g->optim.beta2 = (float)opt_double("--beta2", arg, 0, 0.999999999); break;
	case O_EPS: g->optim.eps = (float)opt_double("--eps", arg, 1e-30, 1); break;
	case O_CLIP: g->optim.clip_norm = (float)opt_double("--clip-grad-norm", arg, 0, 1e30); break;
	case O_SCHED: g->sched = opt_choice("--schedule", arg, sched_words); break;
	default: break;
	}
}

static void apply_rest(struct opts *o, int c, const char *arg)
{
	struct mgpu_train_cfg *g = &o->cfg;

	switch (c) {
	case O_WARMUP_STEPS: g->warmup_steps = opt_int("--warmup-steps", arg, 0, INT64_MAX); break;
	case O_WARMUP_EPOCHS: g->warmup_epochs = opt_double("--warmup-epochs", arg, 0, 1e6); break;
	case O_STEP_EPOCHS: g->step_epochs = opt_double("--step-epochs", arg, 1e-6, 1e6); break;
	case O_GAMMA: g->gamma = opt_double("--gamma", arg, 0, 1); break;
	case O_SEED: g->seed = (uint64_t)opt_int("--seed", arg, 0, INT64_MAX); break;
	case O_VAL: g->val_fraction = opt_double("--val-fraction", arg, 0, 0.99); break;
	case O_CPU_RANKS: o->cpu_ranks = (int)opt_int("--cpu-ranks", arg, 1, MGPU_MAX_DEVICES); break;
	case O_MODE: g->mode = opt_choice("--mode", arg, mode_words); break;
	case O_SYNC:
		o->sync_auto = opt_choice("--sync-backend", arg, sync_words) == 0;
		g->sync = o->sync_auto ? MGPU_SYNC_CPU : opt_choice("--sync-backend", arg, sync_words);
		break;
	case O_ACCUM: g->accum = (int)opt_int("--grad-accum-steps", arg, 1, 1 << 20); break;
	case O_GLOBAL_BATCH: o->global_batch = opt_int("--global-batch-size", arg, 1, 1 << 30); break;
	case O_LR_SCALE: g->lr_scale = opt_choice("--lr-scale", arg, scale_words); break;
	case O_UNEVEN: g->pad_tail = opt_choice("--uneven", arg, uneven_words); break;
	case O_PREFETCH: g->prefetch = (int)opt_int("--prefetch", arg, 0, 64); break;
	case O_TIMEOUT: g->timeout_ms = (int)(1000 * opt_int("--timeout", arg, 1, 86400)); break;
	case O_GPUS: set_gpus(o, arg); break;
	case O_CPU_FALLBACK:
		o->cpu_fallback = (int)opt_int("--cpu-fallback", arg, 1, MGPU_MAX_DEVICES);
		break;
	case O_BACKEND: set_backend(o, arg); break;
	case O_SAVE_DIR: set_path(g->save_dir, "--save-dir", arg); break;
	case O_SAVE_EVERY: g->save_every = opt_int("--save-every", arg, 0, INT64_MAX); break;
	case O_KEEP: g->keep = (int)opt_int("--keep", arg, 0, 1000000); break;
	case O_RESUME: set_path(g->resume, "--resume", arg); break;
	case O_LOG_EVERY: g->log_every = (int)opt_int("--log-every", arg, 1, 1 << 30); break;
	case O_JSON: o->json = 1; break;
	case O_SELFTEST: o->selftest = 1; break;
	case 'q': o->quiet = 1; break;
	case 'v': o->verbose = 1; break;
	case 'V': o->version = 1; break;
	case 'h': usage(); exit(0);
	default: usage_error("unknown option");
	}
}

static void apply(struct opts *o, int c, const char *arg)
{
	if (c <= O_SCHED && c >= O_DATA)
		apply_core(o, c, arg);
	else
		apply_rest(o, c, arg);
}

static void parse(struct opts *o, int argc, char **argv, int track)
{
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+qvhV", longopts, NULL)) != -1) {
		if (c == '?' || c == ':')
			usage_error("unknown or incomplete option '%s'", argv[optind - 1]);
		apply(o, c, optarg);
		if (track && c >= O_DATA && c <= O_SELFTEST)
			o->set[c] = 1;
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
}

/* The value of an option as resolved in cfg, for checkpoints and checks. */
static void render(const struct mgpu_train_cfg *g, int c, char *buf, size_t len)
{
	switch (c) {
	case O_DATA: snprintf(buf, len, "%s", g->data); break;
	case O_MODEL: mgpu_spec_format(&g->spec, buf, len); break;
	case O_EPOCHS: snprintf(buf, len, "%d", g->epochs); break;
	case O_BATCH: snprintf(buf, len, "%d", g->batch); break;
	case O_LR: snprintf(buf, len, "%.17g", g->lr); break;
	case O_MIN_LR: snprintf(buf, len, "%.17g", g->min_lr); break;
	case O_OPT: snprintf(buf, len, "%s", opt_words[g->optim.kind]); break;
	case O_MOMENTUM: snprintf(buf, len, "%.9g", (double)g->optim.momentum); break;
	case O_NESTEROV: snprintf(buf, len, "%d", g->optim.nesterov); break;
	case O_WD: snprintf(buf, len, "%.9g", (double)g->optim.weight_decay); break;
	case O_BETA1: snprintf(buf, len, "%.9g", (double)g->optim.beta1); break;
	case O_BETA2: snprintf(buf, len, "%.9g", (double)g->optim.beta2); break;
	case O_EPS: snprintf(buf, len, "%.9g", (double)g->optim.eps); break;
	case O_CLIP: snprintf(buf, len, "%.9g", (double)g->optim.clip_norm); break;
	case O_SCHED: snprintf(buf, len, "%s", sched_words[g->sched]); break;
	case O_WARMUP_STEPS: snprintf(buf, len, "%lld", (long long)g->warmup_steps); break;
	case O_WARMUP_EPOCHS: snprintf(buf, len, "%.17g", g->warmup_epochs); break;
	case O_STEP_EPOCHS: snprintf(buf, len, "%.17g", g->step_epochs); break;
	case O_GAMMA: snprintf(buf, len, "%.17g", g->gamma); break;
	case O_SEED: snprintf(buf, len, "%llu", (unsigned long long)g->seed); break;
	case O_VAL: snprintf(buf, len, "%.17g", g->val_fraction); break;
	case O_ACCUM: snprintf(buf, len, "%d", g->accum); break;
	case O_LR_SCALE: snprintf(buf, len, "%s", scale_words[g->lr_scale]); break;
	case O_UNEVEN: snprintf(buf, len, "%s", uneven_words[g->pad_tail]); break;
	default: buf[0] = '\0';
	}
}

static const char *opt_name(int c)
{
	const struct option *p;

	for (p = longopts; p->name; p++)
		if (p->val == c)
			return p->name;
	return "?";
}

/* The resolved settings as an argv ("--lr", "0.05", ...), for checkpoints. */
struct canon {
	char store[48][MGPU_PATH_MAX + 16];
	const char *argv[48];
	int argc;
};

static void canonical(const struct mgpu_train_cfg *g, struct canon *cn)
{
	int i;

	cn->argc = 0;
	snprintf(cn->store[cn->argc], sizeof cn->store[0], "--data");
	cn->argv[cn->argc] = cn->store[cn->argc];
	cn->argc++;
	render(g, O_DATA, cn->store[cn->argc], sizeof cn->store[0]);
	cn->argv[cn->argc] = cn->store[cn->argc];
	cn->argc++;
	for (i = 0; saved_opts[i]; i++) {
		int c = saved_opts[i];
		if (c == O_NESTEROV) {
			if (!g->optim.nesterov)
				continue;
			snprintf(cn->store[cn->argc], sizeof cn->store[0], "--nesterov");
			cn->argv[cn->argc] = cn->store[cn->argc];
			cn->argc++;
			continue;
		}
		snprintf(cn->store[cn->argc], sizeof cn->store[0], "--%s", opt_name(c));
		cn->argv[cn->argc] = cn->store[cn->argc];
		cn->argc++;
		render(g, c, cn->store[cn->argc], sizeof cn->store[0]);
		cn->argv[cn->argc] = cn->store[cn->argc];
		cn->argc++;
	}
}

/* A run resumed with other --epochs (or --max-steps) is the checkpoint's
 * run made longer or shorter, not past where it is. Its learning-rate
 * schedule spans the new epochs, so it is no longer bit-identical to an
 * uninterrupted run of either length: say so. */
static void resume_span(const struct opts *o, struct opts *ck,
			const struct mgpu_ckpt_state *st)
{
	int least = st->epoch + (st->epoch_pos > 0);

	if (o->set[O_EPOCHS] && o->cfg.epochs < least)
		usage_error("--epochs %d ends before the checkpoint's step %lld: give at least "
			    "--epochs %d", o->cfg.epochs, (long long)st->step, least);
	if (o->set[O_MAX_STEPS] && o->cfg.max_steps > 0 && o->cfg.max_steps < st->step)
		usage_error("--max-steps %lld ends before the checkpoint's step %lld",
			    (long long)o->cfg.max_steps, (long long)st->step);
	if (o->set[O_EPOCHS] && o->cfg.epochs != ck->cfg.epochs)
		snprintf(ck->resume_note, sizeof ck->resume_note, "--epochs %d, not the "
			 "checkpoint's %d: the learning-rate schedule now spans %d epoch%s from "
			 "step %lld on, so this run is no longer bit-identical to an "
			 "uninterrupted one", o->cfg.epochs, ck->cfg.epochs, o->cfg.epochs,
			 o->cfg.epochs > 1 ? "s" : "", (long long)st->step);
}

/* Defaults, then the checkpoint's settings, then the command line; a
 * setting given on the command line must agree with the checkpoint's. */
static void merge_resume(struct opts *o, int argc, char **argv)
{
	struct mgpu_ckpt_state st;
	struct opts ck;
	char dir[MGPU_CKPT_PATH], a[600], b[600], **cargv = NULL, *full[1002];
	int cargc = 0, i, c;

	if (mgpu_ckpt_resolve(o->cfg.resume, dir, sizeof dir) < 0 ||
	    mgpu_ckpt_load_state(dir, &st, &cargv, &cargc) < 0)
		die_lib();
	memset(&ck, 0, sizeof ck);
	mgpu_train_defaults(&ck.cfg);
	full[0] = argv[0];
	for (i = 0; i < cargc && i < 1000; i++)
		full[i + 1] = cargv[i];
	full[i + 1] = NULL;
	parse(&ck, i + 1, full, 0);
	for (i = 0; identity_opts[i]; i++) {
		c = identity_opts[i];
		render(&ck.cfg, c, a, sizeof a);
		render(&o->cfg, c, b, sizeof b);
		if (o->set[c] && strcmp(a, b) != 0)
			usage_error("--%s %s differs from the checkpoint's %s: a resumed run "
				    "keeps the settings it started with", opt_name(c), b, a);
	}
	resume_span(o, &ck, &st);
	memcpy(ck.set, o->set, sizeof ck.set);
	parse(&ck, argc, argv, 1);
	mgpu_ckpt_free_argv(cargv, cargc);
	*o = ck;
}

static const char *const cols[] = {
	"kind", "step", "epoch", "loss", "lr", "samples_per_s", "step_ms", "data_ms",
	"val_loss", "val_acc", "test_loss", "test_acc", "wall_s", "effective_batch",
	"world_size", "mode", "sync_backend", "peak_bytes", "rss_bytes", "path",
};

struct out {
	const struct mgpu_train_cfg *cfg;
	const char *resume_note;
	int quiet;
	struct mgpu_table t;
	int bar;          /* draw a progress bar on stderr */
	double last_bar;
};

static const char *const kind_names[] = { "step", "eval", "summary", "checkpoint" };

static int put_record(struct out *out, const struct mgpu_record *r)
{
	struct mgpu_table *t = &out->t;

	mgpu_table_str(t, "kind", kind_names[r->kind]);
	mgpu_table_int(t, "step", r->step);
	mgpu_table_int(t, "epoch", r->epoch);
	if (r->kind == MGPU_REC_CKPT) {
		mgpu_table_str(t, "path", r->path);
		return mgpu_table_emit(t);
	}
	if (r->kind == MGPU_REC_STEP) {
		mgpu_table_num(t, "loss", r->loss, 6);
		mgpu_table_num(t, "lr", r->lr, 6);
		mgpu_table_num(t, "samples_per_s", r->samples_per_s, 6);
		mgpu_table_num(t, "step_ms", r->step_ms, 4);
		mgpu_table_num(t, "data_ms", r->data_ms, 4);
		return mgpu_table_emit(t);
	}
	mgpu_table_num(t, "val_loss", r->val_loss, 6);
	mgpu_table_num(t, "val_acc", r->val_acc, 6);
	mgpu_table_num(t, "wall_s", r->wall_s, 5);
	if (r->kind == MGPU_REC_SUMMARY) {
		mgpu_table_num(t, "test_loss", r->test_loss, 6);
		mgpu_table_num(t, "test_acc", r->test_acc, 6);
		mgpu_table_num(t, "samples_per_s", r->samples_per_s, 6);
		mgpu_table_int(t, "effective_batch", r->effective_batch);
		mgpu_table_int(t, "world_size", r->world);
		mgpu_table_str(t, "mode", mgpu_mode_name(r->mode));
		mgpu_table_str(t, "sync_backend", mgpu_sync_name(r->sync));
		mgpu_table_ints(t, "peak_bytes", r->peak_bytes, r->ndev);
		mgpu_table_ints(t, "rss_bytes", r->rss_bytes, r->ndev);
	}
	return mgpu_table_emit(t);
}

/* The run's shape, on stderr once everything is loaded. */
static void announce(const struct out *out, const struct mgpu_record *r)
{
	const struct mgpu_train_cfg *c = out->cfg;
	char spec[512];

	if (out->quiet)
		return;
	mgpu_spec_format(&c->spec, spec, sizeof spec);
	fprintf(stderr, "mgpu-train: model %s; %d %s %s (mode %s, sync %s); effective batch "
		"%lld (%d per device x %d accumulation step%s x %d device%s); %d steps per "
		"epoch, %lld to run%s%s\n", spec, c->world, c->backend,
		c->world > 1 ? "devices" : "device", mgpu_mode_name(c->mode),
		mgpu_sync_name(r->sync), (long long)r->effective_batch, c->batch, c->accum,
		c->accum > 1 ? "s" : "", c->world, c->world > 1 ? "s" : "", r->epoch,
		(long long)(r->step - r->first_step), c->resume[0] ? "; resuming from " : "",
		c->resume);
	if (out->resume_note[0])
		fprintf(stderr, "mgpu-train: %s\n", out->resume_note);
	if (r->first_step >= r->step)
		fprintf(stderr, "mgpu-train: the checkpoint is already at the last step (%lld): "
			"nothing to train (a larger --epochs extends the run)\n",
			(long long)r->first_step);
}

static int on_record(void *ctx, const struct mgpu_record *r)
{
	struct out *out = ctx;

	if (r->kind == MGPU_REC_START) {
		announce(out, r);
		return 0;
	}

	if (out->bar)
		fputs("\r\033[K", stderr);
	if (put_record(out, r) < 0) {
		if (errno == EPIPE) /* the reader went away: stop every rank quietly */
			return mgpu_err(MGPU_ECLOSED, "output closed");
		die_lib();
	}
	return 0;
}

static void on_progress(void *ctx, int64_t step, int64_t total)
{
	struct out *out = ctx;
	double t = mgpu_now_s();
	int w = 30, k;

	if (!out->bar || (t - out->last_bar < 0.1 && step < total))
		return;
	out->last_bar = t;
	k = (int)((double)w * (double)step / (double)(total ? total : 1));
	fprintf(stderr, "\r[%.*s%*s] step %lld/%lld", k, "##############################",
		w - k, "", (long long)step, (long long)total);
	if (step == total)
		fputs("\r\033[K", stderr);
}

/* A few SGD steps of a small MLP on both backends from the same weights and
 * seeded data: the relative difference of the final weights. */
static int steps_compare(const struct mgpu_ops *a, const struct mgpu_ops *b, double *rel)
{
	struct mgpu_spec spec;
	struct mgpu_dev dev[2];
	struct mgpu_model m[2];
	struct mgpu_optim opt[2];
	struct mgpu_optim_cfg oc = { .kind = MGPU_OPT_ADAMW, .beta1 = 0.9f, .beta2 = 0.999f,
				     .eps = 1e-8f, .weight_decay = 0.01f, .clip_norm = 1.0f };
	uint8_t x[64 * 48];
	int32_t y[64];
	float *w[2] = { NULL, NULL };
	double l, c, num = 0, den = 0;
	int i, k, rc = 0;
	size_t j;

	mgpu_spec_parse(&spec, "mlp:48-32-24-5,act=gelu,layernorm,dropout=0.1", "selftest");
	for (j = 0; j < sizeof x; j++)
		x[j] = (uint8_t)(mgpu_hash64(7, j) & 255);
	for (i = 0; i < 64; i++)
		y[i] = (int32_t)(mgpu_hash64(8, (uint64_t)i) % 5);
	memset(m, 0, sizeof m);
	memset(opt, 0, sizeof opt);
	memset(dev, 0, sizeof dev);
	for (k = 0; k < 2 && rc == 0; k++) {
		rc = mgpu_dev_open(&dev[k], k ? b : a, 0);
		if (rc == 0)
			rc = mgpu_model_create(&m[k], &spec, &dev[k], 64);
		if (rc == 0)
			rc = mgpu_model_init(&m[k], 42);
		if (rc == 0)
			rc = mgpu_optim_create(&opt[k], &m[k], &oc);
		for (i = 0; i < 5 && rc == 0; i++) {
			m[k].dropout_seed = (uint64_t)i;
			rc = mgpu_model_load_batch(&m[k], x, y, 64, 1.0f / 255, -0.5f);
			if (rc == 0)
				rc = mgpu_model_forward(&m[k], 64, 1);
			if (rc == 0)
				rc = mgpu_model_loss(&m[k], 64, 1, 1.0f / 64, &l, &c);
			if (rc == 0)
				rc = mgpu_model_backward(&m[k], 64, 0);
			if (rc == 0)
				rc = mgpu_optim_step(&opt[k], 1e-2f, 1.0f);
		}
		w[k] = malloc(m[k].nparams * sizeof(float) + 1);
		if (rc == 0 && w[k])
			rc = mgpu_model_get(&m[k], w[k]);
	}
	for (j = 0; rc == 0 && w[0] && w[1] && j < m[0].nparams; j++) {
		num = fmax(num, fabs((double)w[0][j] - w[1][j]));
		den = fmax(den, fabs((double)w[1][j]));
	}
	*rel = den > 0 ? num / den : num;
	for (k = 0; k < 2; k++) {
		mgpu_optim_free(&opt[k]);
		mgpu_model_free(&m[k]);
		if (dev[k].ops)
			mgpu_dev_close(&dev[k]);
		free(w[k]);
	}
	return rc;
}

/* Every op, then a few training steps, of ops against ref; rows on t. */
static int selftest_backend(struct mgpu_table *t, const struct mgpu_ops *ops,
			    const struct mgpu_ops *ref)
{
	static struct mgpu_ops_report rep;
	double rel;
	int i, bad;

	if (mgpu_ops_compare(ops, 0, ref, 42, &rep) < 0)
		die_lib();
	for (i = 0; i < rep.nrows; i++) {
		const struct mgpu_ops_row *r = &rep.row[i];
		mgpu_table_str(t, "op", r->op);
		mgpu_table_str(t, "shape", r->shape);
		mgpu_table_str(t, "backend", r->backend);
		mgpu_table_str(t, "against", r->ref_backend);
		mgpu_table_num(t, "max_rel_err", r->max_rel_err, 3);
		mgpu_table_num(t, "tolerance", r->tol, 3);
		mgpu_table_int(t, "ok", r->ok);
		if (mgpu_table_emit(t) < 0)
			die_lib();
	}
	if (steps_compare(ops, ref, &rel) < 0)
		die_lib();
	bad = rep.nfail + (rel > 1e-3);
	mgpu_table_str(t, "op", "train_5_steps");
	mgpu_table_str(t, "shape", "mlp:48-32-24-5 gelu layernorm dropout adamw clip");
	mgpu_table_str(t, "backend", ops->name);
	mgpu_table_str(t, "against", ref->name);
	mgpu_table_num(t, "max_rel_err", rel, 3);
	mgpu_table_num(t, "tolerance", 1e-3, 3);
	mgpu_table_int(t, "ok", rel <= 1e-3);
	if (mgpu_table_emit(t) < 0)
		die_lib();
	return bad;
}

/* The CPU half always (cpu against ref); each GPU backend against cpu
 * when it has a device. Exit 1 on any mismatch. */
static int selftest(int json, int quiet)
{
	static const char *const scols[] = { "op", "shape", "backend", "against",
					     "max_rel_err", "tolerance", "ok" };
	const struct mgpu_ops *const *o;
	const struct mgpu_ops *cpu = mgpu_ops_find("cpu"), *ref = mgpu_ops_find("ref");
	struct mgpu_table t;
	int bad;

	mgpu_table_init(&t, stdout, json, scols, 7);
	bad = selftest_backend(&t, cpu, ref);
	for (o = mgpu_ops_all(); *o; o++) {
		char why[256] = "";
		int n = 0;
		if (*o == cpu || *o == ref)
			continue;
		if ((*o)->device_count(&n, why, sizeof why) < 0 || n == 0) {
			if (!quiet)
				fprintf(stderr, "mgpu-train: selftest: no %s device (%s): "
					"only the CPU half ran\n", (*o)->name,
					why[0] ? why : "none found");
			continue;
		}
		bad += selftest_backend(&t, *o, cpu);
	}
	if (!quiet)
		fprintf(stderr, "mgpu-train: selftest: %s\n", bad ? "FAILED" : "passed");
	return bad ? 1 : 0;
}


/* The world size and this process's place: from an outside launcher's
 * environment, or from --cpu-ranks / --gpus when mgpu-train launches. */
static void resolve_world(struct opts *o)
{
	struct mgpu_train_cfg *c = &o->cfg;
	int asked = c->ndevices ? c->ndevices : (o->cpu_ranks ? o->cpu_ranks : 1);

	if (mgpu_launch_env(&c->env) < 0)
		usage_error("%s", mgpu_errmsg());
	c->world = asked;
	if (c->env.launcher != MGPU_LAUNCH_NONE) {
		/* the devices listed are this node's; other nodes have their own */
		if ((o->cpu_ranks || c->ndevices > 1) && asked != c->env.local_world)
			usage_error("%d devices asked for, but %s started %d ranks on this node",
				    asked, mgpu_launcher_name(c->env.launcher),
				    c->env.local_world);
		if (c->mode == MGPU_MODE_DP)
			usage_error("--mode dp runs in one process; start it without %s",
				    mgpu_launcher_name(c->env.launcher));
		c->world = c->env.world;
	}
	if (o->sync_auto || !o->set[O_SYNC])
		c->sync = strcmp(c->backend, "cuda") == 0 && c->mode == MGPU_MODE_DDP ?
				  MGPU_SYNC_NCCL : MGPU_SYNC_CPU;
	if (c->sync == MGPU_SYNC_NCCL && strcmp(c->backend, "cuda") != 0)
		usage_error("--sync-backend nccl needs GPU devices (--gpus)");
}

static void resolve_batch(struct opts *o)
{
	struct mgpu_train_cfg *c = &o->cfg;

	if (o->global_batch && o->set[O_BATCH])
		usage_error("--batch-size and --global-batch-size exclude each other");
	if (mgpu_batch_plan_make(&c->plan, c->batch, o->global_batch, c->accum, c->world) < 0)
		usage_error("%s", mgpu_errmsg());
	c->batch = c->plan.batch;
}

/* An option contradicting the checkpoint is a usage error, whether it is
 * one the checkpoint records (--lr) or one that changes what it does not
 * (--cpu-ranks changes the global batch). */
static void check_resume(const struct opts *o)
{
	int rc;

	if (!o->cfg.resume[0])
		return;
	rc = mgpu_train_check_resume(&o->cfg);
	if (rc == MGPU_EINVAL)
		usage_error("%s", mgpu_errmsg());
	if (rc < 0)
		die_lib();
}

/* mgpu-train starts the ranks of a ddp job itself and supervises them. */
static int launch(struct opts *o, char **argv)
{
	struct mgpu_launch_result res;

	if (mgpu_train_precheck(&o->cfg) < 0)
		die_lib();
	if (mgpu_launch_run(o->cfg.world, argv, &mgpu_interrupted, &res) < 0)
		die_lib();
	if (res.failed_rank >= 0 && res.quiet)
		exit(1);
	if (res.failed_rank >= 0)
		die("rank %d failed: %s", res.failed_rank, res.why);
	return res.status;
}

static int finish(const struct opts *o, int rc)
{
	if (rc == MGPU_ECLOSED)
		exit(o->cfg.env.launcher == MGPU_LAUNCH_SELF ? MGPU_EXIT_PIPE : 1);
	if (rc == MGPU_EINTR) {
		if (!o->quiet && o->cfg.env.rank == 0)
			fprintf(stderr, "mgpu-train: %s%s\n", mgpu_errmsg(),
				o->cfg.save_dir[0] ? ", checkpoint written" : "");
		finish_stdout();
		return 130;
	}
	/* Tell our own launcher this rank only followed another's failure. */
	if ((rc == MGPU_EPEER || rc == MGPU_ETIMEOUT) && o->cfg.env.launcher == MGPU_LAUNCH_SELF) {
		fprintf(stderr, "mgpu-train: %s: error: %s\n", mgpu_diag_prefix, mgpu_errmsg());
		exit(MGPU_EXIT_PEER);
	}
	if (rc < 0)
		die_lib();
	return 0;
}

int cmd_main(int argc, char **argv)
{
	struct opts o;
	struct out out;
	struct canon cn;
	struct mgpu_train_hooks h = { on_record, on_progress, &out };

	memset(&o, 0, sizeof o);
	mgpu_train_defaults(&o.cfg);
	parse(&o, argc, argv, 1);
	if (o.version) {
		print_version(o.verbose);
		return 0;
	}
	if (o.selftest)
		return selftest(o.json, o.quiet);
	if (o.cfg.resume[0])
		merge_resume(&o, argc, argv);
	resolve_gpus(&o);
	resolve_world(&o);
	resolve_batch(&o);
	check_resume(&o);
	if (o.cfg.env.launcher == MGPU_LAUNCH_NONE && o.cfg.world > 1 &&
	    o.cfg.mode == MGPU_MODE_DDP)
		return launch(&o, argv);
	if (o.cfg.world > 1 && o.cfg.mode == MGPU_MODE_DDP)
		snprintf(mgpu_diag_prefix, sizeof mgpu_diag_prefix, "rank %d", o.cfg.env.rank);
	canonical(&o.cfg, &cn);
	o.cfg.argv = cn.argv;
	o.cfg.argc = cn.argc;
	o.cfg.stop = &mgpu_interrupted;
	memset(&out, 0, sizeof out);
	out.bar = !o.quiet && isatty(2) && o.cfg.env.rank == 0;
	out.quiet = o.quiet;
	out.cfg = &o.cfg;
	out.resume_note = o.resume_note;
	mgpu_table_init(&out.t, stdout, o.json, cols, (int)(sizeof cols / sizeof cols[0]));
	return finish(&o, mgpu_train_run(&o.cfg, &h));
}
