/*
 * opts.c - mgpu-train's option table and what it drives (see opts.h).
 *
 * A row's flags say what a checkpoint does with the option: SAVED ones are
 * recorded; FIXED ones are recorded and a resumed run may not change them,
 * since they shape the arithmetic and the continuation must be
 * bit-identical. The batch split (per-device batch, accumulation) is saved
 * but may change with the world size as long as the global batch stays
 * (the trainer checks that); --epochs may change to extend a run, which
 * then says that it is no longer bit-identical (resume_span).
 */
#include "opts.h"

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* free, setenv */
#include <string.h> /* strcmp, strlen */

#include "../common.h"   /* parse_options, usage_error, note */
#include "core/table.h"  /* MGPU_FMT_* */
#include "comm/launch.h" /* mgpu_launch_env */
#include "comm/rdzv.h"   /* MGPU_MAX_NODES */
#include "ops/ops.h"     /* mgpu_ops_find, mgpu_prec_words, MGPU_PREC_BF16 */
#include "train/ckpt.h"  /* mgpu_ckpt_load_state */
#include "train/sync.h"  /* mgpu_sync_words */

_Static_assert(MGPU_PATH_MAX >= MGPU_OPT_PATH_MAX, "PATH rows fill cfg's path fields");

static const char *const opt_words[] = { "sgd", "adamw", NULL };
static const char *const sched_words[] = { "constant", "cosine", "step", NULL };
static const char *const mode_words[] = { "ddp", "dp", NULL };
static const char *const scale_words[] = { "none", "linear", "sqrt", NULL };
static const char *const uneven_words[] = { "drop", "pad", NULL };
static const char *const predict_words[] = { "logits", "class", NULL };

static int set_model(void *t, const char *arg)
{
	return mgpu_spec_load(&((struct train_opts *)t)->cfg.spec, arg);
}

static void show_model(const void *t, char *buf, size_t len)
{
	mgpu_spec_format(&((const struct train_opts *)t)->cfg.spec, buf, len);
}

/* --gpus: the list is resolved later (main.c resolve_gpus); naming GPUs
 * makes cuda the backend unless a later --backend says otherwise. */
static int set_gpus(void *t, const char *arg)
{
	struct train_opts *o = t;

	o->gpus = arg;
	o->cfg.ndevices = 1;
	snprintf(o->cfg.backend, sizeof o->cfg.backend, "cuda");
	return 0;
}

static void show_gpus(const void *t, char *buf, size_t len)
{
	const struct train_opts *o = t;

	snprintf(buf, len, "%s", o->gpus ? o->gpus : "");
}

static int set_backend(void *t, const char *arg)
{
	struct train_opts *o = t;

	if (!mgpu_ops_find(arg))
		return mgpu_err(MGPU_EINVAL, "--backend: '%s' is not in this build "
				"(see mgpu-train -vV)", arg);
	snprintf(o->cfg.backend, sizeof o->cfg.backend, "%s", arg);
	return 0;
}

static void show_backend(const void *t, char *buf, size_t len)
{
	snprintf(buf, len, "%s", ((const struct train_opts *)t)->cfg.backend);
}

static int set_augment(void *t, const char *arg)
{
	return mgpu_augment_parse(arg, &((struct train_opts *)t)->cfg.augment, "--augment");
}

static void show_augment(const void *t, char *buf, size_t len)
{
	mgpu_augment_format(&((const struct train_opts *)t)->cfg.augment, buf, len);
}

static int set_pairs(void *t, const char *arg)
{
	return mgpu_augment_parse_pairs(arg, &((struct train_opts *)t)->cfg.augment,
					"--flip-pairs");
}

static void show_pairs(const void *t, char *buf, size_t len)
{
	mgpu_augment_format_pairs(&((const struct train_opts *)t)->cfg.augment, buf, len);
}

#define O struct train_opts
#define SAVED MGPU_OPT_SAVED
#define FIXED MGPU_OPT_FIXED

static const struct mgpu_opt options[] = {
	MGPU_OPT_HEAD("data and model"),
	MGPU_OPT_ROW(MGPU_OPT_PATH, "data", 0, O, cfg.data, 0, 0, "PATH",
		     "a cache (mgpu-cache), a shard manifest or archive, or an IDX directory", SAVED),
	MGPU_OPT_ROW(MGPU_OPT_INT, "prefetch", 0, O, cfg.prefetch, 0, 64, "N",
		     "background threads loading batches ahead", 0),
	MGPU_OPT_CALL("augment", 0, set_augment, show_augment, "crop=P,flip,rotate=D|none",
		      "training images: a random crop with P pixels of zero padding, a "
		      "horizontal flip (p 0.5) and a turn within D degrees, drawn from seed, "
		      "epoch and sample", "none", FIXED),
	MGPU_OPT_CALL("model", 0, set_model, show_model, "SPEC|FILE",
		      "mlp:D0-D1-...-Dn[,act=relu|gelu|tanh][,dropout=P][,layernorm]; "
		      "gpt:layers=L,heads=H,dim=D,ctx=T[,vocab=V][,dropout=P]; "
		      "cnn:LAYER; LAYER; ... (mgpu-model(7))", NULL, FIXED),
	/* fp16 comes with dynamic loss scaling (the --loss-scale rows); bf16
	 * has fp32's range and needs none */
	MGPU_OPT_WORDS("dtype", O, cfg.prec, mgpu_prec_words, "fp32|bf16|fp16",
		       "the matrix products' inputs (fp32 accumulation, master weights "
		       "and optimizer state; fp16 with dynamic loss scaling)", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_U64, "seed", 0, O, cfg.seed, 0, 9.3e18, "N",
		     "seed of init, split, order, dropout", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_DOUBLE, "val-fraction", 0, O, cfg.val_fraction, 0, 0.99, "F",
		     "validation share of the training file", FIXED),
	MGPU_OPT_HEAD("targets beyond a class id (keypoints, masks, vectors)"),
	MGPU_OPT_ROW(MGPU_OPT_FLOAT, "sigma", 0, O, cfg.topt.sigma, 0.01, 1000, "S",
		     "keypoints: the Gaussian's sigma of a confidence map, in map cells", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_INT, "output-stride", 0, O, cfg.topt.stride, 1, 64, "N",
		     "keypoints: input pixels per map cell (maps of ceil(H/N) x ceil(W/N))",
		     FIXED),
	MGPU_OPT_CALL("flip-pairs", 0, set_pairs, show_pairs, "A:B,...|none",
		      "keypoints: parts a flip (--augment flip) swaps, 0-based (left and "
		      "right wrist...)", "none", FIXED),
	MGPU_OPT_ROWD(MGPU_OPT_DOUBLE, "pck", 0, O, cfg.pck_px, 0, 1e6, "PIXELS",
		      "keypoints: PCK counts parts within this many input pixels",
		      "5% of the image's larger side", MGPU_OPT_UNSET0 | SAVED),
	MGPU_OPT_ROWD(MGPU_OPT_INT, "mask-classes", 0, O, cfg.mask_classes, 0, 256, "N",
		      "masks: the classes of the per-pixel logits",
		      "the largest label in the data + 1", MGPU_OPT_UNSET0 | FIXED),
	MGPU_OPT_HEAD("training"),
	MGPU_OPT_ROW(MGPU_OPT_INT, "epochs", 0, O, cfg.epochs, 1, 1000000, "N",
		     "passes over the training data (a resume may raise it)", SAVED),
	MGPU_OPT_ROWD(MGPU_OPT_I64, "max-steps", 0, O, cfg.max_steps, 0, 9.3e18, "N",
		      "stop after N optimizer steps (the schedule ends there)", "0: none", SAVED),
	MGPU_OPT_ROW(MGPU_OPT_INT, "batch-size", 0, O, batch, 1, 1 << 20, "N",
		     "samples per device and micro-step", SAVED),
	MGPU_OPT_ROW(MGPU_OPT_INT, "grad-accum-steps", 0, O, accum, 1, 1 << 20, "N",
		     "micro-steps per optimizer step", SAVED),
	MGPU_OPT_ROW(MGPU_OPT_I64, "global-batch-size", 0, O, global_batch, 1, 1 << 30, "N",
		     "split evenly over devices x micro-steps", MGPU_OPT_NODEF | MGPU_OPT_UNSET0),
	MGPU_OPT_WORDS("optimizer", O, cfg.optim.kind, opt_words, "sgd|adamw", "optimizer", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_DOUBLE, "lr", 0, O, cfg.lr, 0, 1e6, "X", "peak learning rate", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_DOUBLE, "min-lr", 0, O, cfg.min_lr, 0, 1e6, "X",
		     "the cosine schedule's floor", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_FLOAT, "momentum", 0, O, cfg.optim.momentum, 0, 0.999999, "X",
		     "SGD momentum", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "nesterov", 0, O, cfg.optim.nesterov, 0, 0, NULL,
		     "Nesterov momentum", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_FLOAT, "weight-decay", 0, O, cfg.optim.weight_decay, 0, 1e3, "X",
		     "decoupled weight decay", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_FLOAT, "beta1", 0, O, cfg.optim.beta1, 0, 0.999999, "X",
		     "AdamW first-moment decay", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_FLOAT, "beta2", 0, O, cfg.optim.beta2, 0, 0.999999999, "X",
		     "AdamW second-moment decay", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_FLOAT, "eps", 0, O, cfg.optim.eps, 1e-30, 1, "X", "AdamW epsilon",
		     FIXED),
	MGPU_OPT_ROWD(MGPU_OPT_FLOAT, "clip-grad-norm", 0, O, cfg.optim.clip_norm, 0, 1e30, "X",
		      "clip the gradient's norm to X", "0: off", FIXED),
	MGPU_OPT_WORDS("schedule", O, cfg.sched, sched_words, "constant|cosine|step",
		       "learning-rate schedule", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_I64, "warmup-steps", 0, O, cfg.warmup_steps, 0, 9.3e18, "N",
		     "linear warmup over N steps", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_DOUBLE, "warmup-epochs", 0, O, cfg.warmup_epochs, 0, 1e6, "X",
		     "linear warmup over X epochs", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_DOUBLE, "step-epochs", 0, O, cfg.step_epochs, 1e-6, 1e6, "X",
		     "step schedule: the period in epochs", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_DOUBLE, "gamma", 0, O, cfg.gamma, 0, 1, "X",
		     "step schedule: the factor per period", FIXED),
	MGPU_OPT_WORDS("lr-scale", O, cfg.lr_scale, scale_words, "none|linear|sqrt",
		       "scale the rate with devices x accumulation", FIXED),
	MGPU_OPT_HEAD("devices and data parallelism"),
	MGPU_OPT_ROWD(MGPU_OPT_INT, "cpu-ranks", 0, O, cpu_ranks, 1, MGPU_MAX_DEVICES, "N",
		      "CPU ranks", "1", MGPU_OPT_UNSET0),
	MGPU_OPT_CALL("gpus", 0, set_gpus, show_gpus, "LIST|all|auto|-",
		      "CUDA devices, one rank each (auto: as mgpu-probe selects; -: the list "
		      "on standard input; 0,0: two ranks share GPU 0, cpu sync)", "", 0),
	MGPU_OPT_ROW(MGPU_OPT_INT, "cpu-fallback", 0, O, cpu_fallback, 1, MGPU_MAX_DEVICES, "N",
		     "with --gpus - or auto: N CPU ranks when there is no GPU",
		     MGPU_OPT_NODEF | MGPU_OPT_UNSET0),
	MGPU_OPT_CALL("backend", 0, set_backend, show_backend, "ref|cpu|cuda",
		      "backend of the devices", "cpu, or cuda with --gpus", 0),
	MGPU_OPT_WORDS("mode", O, cfg.mode, mode_words, "ddp|dp",
		       "a process per device, or DataParallel threads", 0),
	MGPU_OPT_WORDS("sync-backend", O, sync, mgpu_sync_words, "auto|cpu|nccl|mpi",
		       "gradient all-reduce", 0),
	MGPU_OPT_WORDS_N("grad-dtype", O, cfg.grad_prec, mgpu_prec_words, MGPU_PREC_BF16 + 1,
			 "fp32|bf16", "all-reduce gradients in bf16 (half the bytes)", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "sync-bn", 0, O, cfg.sync_bn, 0, 0, NULL,
		     "BatchNorm with the whole global batch's statistics (torch's "
		     "SyncBatchNorm); without it each rank normalises its own", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_INT, "nnodes", 0, O, nnodes, 1, MGPU_MAX_NODES, "N",
		     "nodes, one launcher each (MASTER_ADDR, MASTER_PORT name node 0)", 0),
	MGPU_OPT_ROW(MGPU_OPT_INT, "node-rank", 0, O, node_rank, 0, MGPU_MAX_NODES - 1, "I",
		     "this launcher's node, 0 to --nnodes - 1", 0),
	MGPU_OPT_ROW(MGPU_OPT_INT, "port", 0, O, port, 1, 65535, "N",
		     "node 0's rendezvous port (sets MASTER_PORT)", MGPU_OPT_NODEF | MGPU_OPT_UNSET0),
	MGPU_OPT_WORDS("uneven", O, cfg.pad_tail, uneven_words, "drop|pad",
		       "the epoch's last partial global batch", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_INT, "timeout", 0, O, timeout_s, 1, 86400, "SECONDS",
		     "a silent rank fails the job after this", 0),
	MGPU_OPT_HEAD("checkpoints"),
	MGPU_OPT_ROW(MGPU_OPT_PATH, "save-dir", 0, O, cfg.save_dir, 0, 0, "DIR",
		     "write checkpoints here", MGPU_OPT_NODEF),
	MGPU_OPT_ROWD(MGPU_OPT_I64, "save-every", 0, O, cfg.save_every, 0, 9.3e18, "N",
		      "steps between checkpoints", "0: each epoch", 0),
	MGPU_OPT_ROW(MGPU_OPT_INT, "keep", 0, O, cfg.keep, 0, 1000000, "N",
		     "checkpoints kept in the save dir", 0),
	MGPU_OPT_ROW(MGPU_OPT_PATH, "resume", 0, O, cfg.resume, 0, 0, "DIR",
		     "continue from DIR/latest or a checkpoint directory", MGPU_OPT_NODEF),
	MGPU_OPT_ROW(MGPU_OPT_PATH, "init", 0, O, cfg.init, 0, 0, "FILE",
		     "a gpt's starting weights: a Hugging Face GPT-2 model.safetensors or an "
		     "mgpu checkpoint's (the optimizer starts fresh)", MGPU_OPT_NODEF),
	MGPU_OPT_ROW(MGPU_OPT_PATH, "export-hf", 0, O, export_hf, 0, 0, "DIR",
		     "after training, write a gpt as Hugging Face GPT-2 (DIR/model.safetensors, "
		     "DIR/config.json)", MGPU_OPT_NODEF | MGPU_OPT_META),
	MGPU_OPT_HEAD("text generation (gpt models)"),
	MGPU_OPT_ROW(MGPU_OPT_INT, "sample", 0, O, sample, 1, 1 << 24, "N",
		     "after training, print N generated bytes after --prompt on stdout",
		     MGPU_OPT_NODEF | MGPU_OPT_UNSET0),
	MGPU_OPT_ROWD(MGPU_OPT_STR, "prompt", 0, O, prompt, 0, 0, "TEXT",
		      "the text the sample continues", "a line break", 0),
	MGPU_OPT_ROW(MGPU_OPT_STR, "tokenizer", 0, O, tokenizer, 0, 0, "PATH",
		     "token data: bits per byte, --prompt and --sample through this tokenizer "
		     "(mgpu-shard --bpe's bpe.txt, or GPT-2's encoder.json + vocab.bpe DIR)",
		     MGPU_OPT_NODEF),
	MGPU_OPT_ROWD(MGPU_OPT_DOUBLE, "temperature", 0, O, temperature, 0, 100, "X",
		      "0: the most likely byte; above: seeded draws from softmax(logits/X)",
		      "0", MGPU_OPT_UNSET0), /* at 0 left out of -v, which a run without
					      * --sample could not take */
	MGPU_OPT_HEAD("metrics and checks"),
	MGPU_OPT_ROW(MGPU_OPT_INT, "log-every", 0, O, cfg.log_every, 1, 1 << 30, "N",
		     "steps per step record", 0),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "per-class", 0, O, cfg.per_class, 0, 0, NULL,
		     "after the summary, a class row per class: its test accuracy", 0),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "selftest", 0, O, selftest, 0, 0, NULL,
		     "compare every backend op against the CPU and exit", MGPU_OPT_META),
	/* issue 22: configuration files, TensorBoard, evaluation, fp16 */
	MGPU_OPT_HEAD("TensorBoard"),
	MGPU_OPT_ROWD(MGPU_OPT_PATH, "tensorboard", 0, O, tensorboard, 0, 0, "DIR",
		      "write TensorBoard event files of the run's metrics to DIR",
		      "SAVE_DIR/tb with --save-dir", 0),
	MGPU_OPT_HEAD("using a trained model"),
	MGPU_OPT_ROW(MGPU_OPT_FLAG, "evaluate", 0, O, cfg.evaluate, 0, 0, NULL,
		     "evaluate the --resume checkpoint on --data's splits, without training", 0),
	MGPU_OPT_ROW(MGPU_OPT_PATH, "predict", 0, O, cfg.predict, 0, 0, "FILE.npy",
		     "at the end, write each test sample's outputs in data order", MGPU_OPT_NODEF),
	MGPU_OPT_WORDS("predict-as", O, cfg.predict_class, predict_words, "logits|class",
		       "what --predict writes: float32 logits or int32 class ids", 0),
	MGPU_OPT_HEAD("fp16 loss scaling (--dtype fp16)"),
	MGPU_OPT_ROW(MGPU_OPT_DOUBLE, "loss-scale", 0, O, cfg.loss_scale_init, 1e-30, 1e30, "X",
		     "the initial loss scale", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_DOUBLE, "loss-scale-growth", 0, O, cfg.loss_scale_growth, 1, 1e6,
		     "X", "its factor after --loss-scale-interval clean steps", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_DOUBLE, "loss-scale-backoff", 0, O, cfg.loss_scale_backoff, 1e-6,
		     1, "X", "its factor after an overflow (the step is skipped)", FIXED),
	MGPU_OPT_ROW(MGPU_OPT_I64, "loss-scale-interval", 0, O, cfg.loss_scale_interval, 1,
		     9.3e18, "N", "clean steps before the scale grows", FIXED),
	MGPU_OPT_CONFIG(O, com),
	MGPU_OPT_COMMON(O, com),
	MGPU_OPT_TABLE_END,
};

#undef O
#undef SAVED
#undef FIXED

static const char synopsis[] =
	"usage: mgpu-train [options]\n"
	"Train a model data-parallel; metrics go to stdout as TSV (or JSON Lines).\n";

static struct train_opts def; /* the defaults --help shows */
static const struct tool_cli cli = { options, synopsis, &def, sizeof(struct train_opts) };

static void defaults(struct train_opts *o)
{
	memset(o, 0, sizeof *o);
	mgpu_train_defaults(&o->cfg);
	o->batch = o->cfg.plan.batch;
	o->accum = o->cfg.plan.accum;
	o->world = 1;
	o->timeout_s = o->cfg.timeout_ms / 1000;
	o->nnodes = 1;
}

/* "--gpus 0 1" as TensorFlow users type it: option parsing stops at "1",
 * so say what to write (--gpus's list and the GPU ids after it, joined by
 * commas). */
static void gpus_words(const char *gpus, int n, char **words)
{
	char list[512];
	size_t len;
	int i;

	for (i = 0; i < n && words[i][0] && strspn(words[i], "0123456789") == strlen(words[i]); i++)
		;
	if (i == 0)
		return;
	n = i;
	len = (size_t)snprintf(list, sizeof list, "%s", gpus);
	for (i = 0; i < n && len < sizeof list; i++)
		len += (size_t)snprintf(list + len, sizeof list - len, ",%s", words[i]);
	if (len >= sizeof list)
		return;
	usage_error("unexpected argument '%s': --gpus takes one comma-separated list: write "
		    "--gpus %s", words[0], list);
}

/* One command line (or a checkpoint's argv) into o, over what o holds. */
static void parse_into(struct train_opts *o, int argc, char **argv,
		       struct mgpu_opt_given *given)
{
	int first;

	defaults(&def);
	first = parse_options(&cli, o, &o->com, argc, argv, 1, given);
	if (first < argc && o->gpus)
		gpus_words(o->gpus, argc - first, argv + first);
	if (first < argc)
		usage_error("unexpected argument '%s'", argv[first]);
	o->cfg.timeout_ms = 1000 * o->timeout_s;
}

int train_opts_given(const struct train_opts *o, const char *name)
{
	return mgpu_opt_was_given(options, &o->given, name);
}

/* A run resumed with other --epochs (or --max-steps) is the checkpoint's
 * run made longer or shorter, not past where it is. Its learning-rate
 * schedule spans the new epochs, so it is no longer bit-identical to an
 * uninterrupted run of either length: say so. */
static void resume_span(const struct train_opts *o, struct train_opts *ck,
			const struct mgpu_ckpt_state *st)
{
	int least = st->epoch + (st->epoch_pos > 0);

	if (train_opts_given(o, "epochs") && o->cfg.epochs < least)
		usage_error("--epochs %d ends before the checkpoint's step %lld: give at least "
			    "--epochs %d", o->cfg.epochs, (long long)st->step, least);
	if (train_opts_given(o, "max-steps") && o->cfg.max_steps > 0 &&
	    o->cfg.max_steps < st->step)
		usage_error("--max-steps %lld ends before the checkpoint's step %lld",
			    (long long)o->cfg.max_steps, (long long)st->step);
	if (train_opts_given(o, "epochs") && o->cfg.epochs != ck->cfg.epochs)
		snprintf(ck->resume_note, sizeof ck->resume_note, "--epochs %d, not the "
			 "checkpoint's %d: the learning-rate schedule now spans %d epoch%s from "
			 "step %lld on, so this run is no longer bit-identical to an "
			 "uninterrupted one", o->cfg.epochs, ck->cfg.epochs, o->cfg.epochs,
			 o->cfg.epochs > 1 ? "s" : "", (long long)st->step);
	else if (train_opts_given(o, "max-steps") && o->cfg.max_steps != ck->cfg.max_steps)
		snprintf(ck->resume_note, sizeof ck->resume_note, "--max-steps %lld, not the "
			 "checkpoint's %lld: the learning-rate schedule now ends %s from step "
			 "%lld on, so this run is no longer bit-identical to an uninterrupted one",
			 (long long)o->cfg.max_steps, (long long)ck->cfg.max_steps,
			 o->cfg.max_steps > 0 ? "at the new last step" : "with the last epoch",
			 (long long)st->step);
}

/* The command line must not change a FIXED setting of the checkpoint ck. */
static void check_fixed(const struct train_opts *o, const struct train_opts *ck)
{
	const struct mgpu_opt *d = mgpu_opt_fixed_differs(options, ck, o, &o->given);
	char a[600], b[600];

	if (!d)
		return;
	mgpu_opt_render(d, ck, 1, a, sizeof a);
	mgpu_opt_render(d, o, 1, b, sizeof b);
	usage_error("--%s %s differs from the checkpoint's %s: a resumed run keeps the "
		    "settings it started with", d->name, b, a);
}

/* Defaults, then the checkpoint's settings, then the command line; a
 * setting given on the command line must agree with the checkpoint's. */
static void merge_resume(struct train_opts *o, int argc, char **argv)
{
	static struct train_opts ck;
	struct mgpu_ckpt_state st;
	char dir[MGPU_CKPT_PATH], **cargv = NULL, *full[1002];
	int cargc = 0, i;

	if (mgpu_ckpt_resolve(o->cfg.resume, dir, sizeof dir) < 0 ||
	    mgpu_ckpt_load_state(dir, &st, &cargv, &cargc) < 0)
		die_lib();
	defaults(&ck);
	full[0] = argv[0];
	for (i = 0; i < cargc && i < 1000; i++)
		full[i + 1] = cargv[i];
	full[i + 1] = NULL;
	parse_into(&ck, i + 1, full, NULL);
	check_fixed(o, &ck);
	resume_span(o, &ck, &st);
	parse_into(&ck, argc, argv, &ck.given);
	mgpu_ckpt_free_argv(cargv, cargc);
	ck.resume_step = st.step;
	*o = ck;
}

void train_opts_parse(struct train_opts *o, int argc, char **argv)
{
	char port[16];

	defaults(o);
	parse_into(o, argc, argv, &o->given);
	/* --port is MASTER_PORT by another name: the launchers, the ranks they
	 * start and the rendezvous all read the variable */
	if (o->port) {
		snprintf(port, sizeof port, "%d", o->port);
		setenv("MASTER_PORT", port, 1);
	}
	if (o->cfg.resume[0] && !o->selftest)
		merge_resume(o, argc, argv);
	if (o->cfg.per_class && mgpu_spec_is_lm(&o->cfg.spec))
		usage_error("--per-class needs an mlp: a gpt's classes are bytes of text");
}

void train_opts_saved(const struct train_opts *o, struct mgpu_opt_argv *out)
{
	if (mgpu_opt_saved_argv(options, o, out) < 0)
		die_lib();
}

/* Rows of the run's identity besides the saved ones (but --data, a path
 * each node may name its own way: the trainer adds the data's identity). */
static int in_ident(const struct mgpu_opt *r)
{
	if (!r->name || r->type == MGPU_OPT_GROUP || strcmp(r->name, "data") == 0)
		return 0;
	return (r->flags & (MGPU_OPT_SAVED | MGPU_OPT_FIXED)) ||
	       strcmp(r->name, "max-steps") == 0 || strcmp(r->name, "save-every") == 0;
}

void train_opts_ident(const struct train_opts *o, char *buf, size_t len)
{
	const struct mgpu_opt *r;
	const struct mgpu_train_cfg *c = &o->cfg;
	char v[600];
	size_t n = 0;

	for (r = options; r->type != MGPU_OPT_END && n < len; r++) {
		if (!in_ident(r))
			continue;
		mgpu_opt_render(r, o, 1, v, sizeof v);
		n += (size_t)snprintf(buf + n, len - n, "--%s %s\n", r->name, v);
	}
	if (n < len)
		n += (size_t)snprintf(buf + n, len - n, "--global-batch-size %lld\n"
				      "--mode %s\n--sync-backend %s\n--resume %s%lld\n",
				      (long long)c->plan.global, c->mode ? "dp" : "ddp",
				      mgpu_sync_words[c->sync < MGPU_SYNC_KINDS ? c->sync : 0],
				      c->resume[0] ? "step " : "", (long long)o->resume_step);
	if (n >= len && len)
		buf[len - 1] = '\0';
}

void train_opts_show(const struct train_opts *o, FILE *f)
{
	static struct train_opts s;
	char list[8 * MGPU_MAX_DEVICES] = "";
	size_t n = 0;
	int i;

	/* what main.c resolved, in the options' own terms */
	s = *o;
	for (i = 0; i < s.cfg.ndevices && s.gpus; i++)
		n += (size_t)snprintf(list + n, sizeof list - n, "%s%d", i ? "," : "",
				      s.cfg.devices[i]);
	if (s.gpus)
		s.gpus = list;
	else if (!s.cpu_ranks && s.cfg.env.launcher == MGPU_LAUNCH_NONE)
		s.cpu_ranks = s.world;
	/* one rank syncs nothing (the summary says none): auto is what holds */
	s.sync = s.world > 1 ? s.cfg.sync : 0;
	s.global_batch = s.cfg.plan.global;
	print_config(f, &cli, &s, NULL);
}
