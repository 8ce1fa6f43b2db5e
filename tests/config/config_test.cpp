// The YAML config loader: defaults, overrides, and one clear error per kind of bad input.
#include "config/config.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/config/config_errors.h"

namespace roam::gen {
namespace {

using config::ParseConfig;
using config::ParsePlanningOverrides;
using testing::ErrorOf;
using testing::ExpectMentions;

TEST(Config, FamilyDefaultsFillUnsetKeys) {
  config::Config c = ParseConfig("model: {family: bert}", "bert-x.yaml");
  EXPECT_EQ(c.model.family, Family::kBert);
  EXPECT_EQ(c.model.vocab, 30522);
  EXPECT_EQ(c.model.n_positions, 512);
  EXPECT_EQ(c.model.name, "bert-x");
  EXPECT_EQ(c.training.optimizer, OptimizerKind::kAdam);
  EXPECT_EQ(c.planner.partition.node_limit, 40);
  EXPECT_EQ(c.planner.alignment, 512);
}

TEST(Config, ReadsEverySection) {
  config::Config c = ParseConfig(R"(
model:
  family: gpt2
  n_layer: 2
  n_embd: 64
  n_head: 4
  dtype: float16
  device: cpu
training:
  optimizer: sgd
  momentum: 0.9
  nesterov: true
planner:
  mode: model
  threads: 3
  time_limit_s: 60
  alignment: 256
  bound_shortcut: false
  partition: {node_limit: 100, alpha: 3, delay_radius: 0.5, update_placement: at-end}
  leaf_order: {enabled: false, time_limit_s: 2.5, max_lp_iterations: 7000, max_lp_work: 123456}
  leaf_layout: {time_limit_s: 1.5, max_storages: 9, max_lp_work: 4321,
                search: {bottom_left: true, random_preorders: 0}}
  final_layout: {max_work: 12345, search: {bottom_left: true, backjumping: false, initial_node_limit: 500}}
)",
                                 "c.yaml");
  EXPECT_EQ(c.model.n_layer, 2);
  EXPECT_EQ(c.model.dtype, DType::kFloat16);
  EXPECT_EQ(c.model.device, Device::kCpu);
  EXPECT_EQ(c.training.optimizer, OptimizerKind::kSgd);
  EXPECT_DOUBLE_EQ(c.training.momentum, 0.9);
  EXPECT_TRUE(c.training.nesterov);
  EXPECT_EQ(c.planner.mode, OptimizeMode::kModel);
  EXPECT_EQ(c.planner.threads, 3);
  EXPECT_DOUBLE_EQ(c.planner.time_limit, 60);
  EXPECT_EQ(c.planner.alignment, 256);
  EXPECT_FALSE(c.planner.bound_shortcut);
  EXPECT_EQ(c.planner.partition.node_limit, 100);
  EXPECT_DOUBLE_EQ(c.planner.partition.alpha, 3);
  EXPECT_DOUBLE_EQ(c.planner.partition.delay_radius, 0.5);
  EXPECT_EQ(c.planner.partition.update_placement, UpdatePlacement::kAtEnd);
  EXPECT_FALSE(c.planner.leaf_order.enabled);
  EXPECT_DOUBLE_EQ(c.planner.leaf_order.time_limit, 2.5);
  EXPECT_EQ(c.planner.leaf_order.max_lp_iterations, 7000);
  EXPECT_EQ(c.planner.leaf_order.max_lp_work, 123456);
  EXPECT_TRUE(c.planner.leaf_layout.enabled);
  EXPECT_DOUBLE_EQ(c.planner.leaf_layout.time_limit, 1.5);
  EXPECT_EQ(c.planner.leaf_layout.max_storages, 9);
  EXPECT_EQ(c.planner.leaf_layout.max_lp_work, 4321);
  EXPECT_TRUE(c.planner.leaf_layout.search.bottom_left);
  EXPECT_EQ(c.planner.leaf_layout.search.random_preorders, 0);
  EXPECT_TRUE(c.planner.leaf_layout.search.backjumping);  // untouched: the default
  EXPECT_TRUE(c.planner.final_layout.search.bottom_left);
  EXPECT_FALSE(c.planner.final_layout.search.backjumping);
  EXPECT_EQ(c.planner.final_layout.search.initial_node_limit, 500);
  EXPECT_EQ(c.planner.final_layout.max_work, 12345);
}

// The merge's and the order ILP's switches and model mode's share, reachable from a config.
TEST(Config, ReadsTheMergeOrderIlpAndModelModeSwitches) {
  const config::Config c = ParseConfig(R"(model: {family: gpt2}
planner:
  order_share: 0.25
  leaf_order: {contract: false, symmetry_breaking: false, max_nonzeros: 5}
  merge: {slide_down: false, search_reassignment: false, search_max_nodes: 10,
          search_time_limit_s: 0.5, search_max_buffers: 7}
)",
                                       "c.yaml");
  EXPECT_DOUBLE_EQ(c.planner.order_share, 0.25);
  EXPECT_FALSE(c.planner.leaf_order.contract);
  EXPECT_FALSE(c.planner.leaf_order.symmetry_breaking);
  EXPECT_EQ(c.planner.leaf_order.max_nonzeros, 5);
  EXPECT_FALSE(c.planner.merge.slide_down);
  EXPECT_FALSE(c.planner.merge.search_reassignment);
  EXPECT_EQ(c.planner.merge.search_max_nodes, 10);
  EXPECT_DOUBLE_EQ(c.planner.merge.search_time_limit_s, 0.5);
  EXPECT_EQ(c.planner.merge.search_max_buffers, 7);
  ExpectMentions(ErrorOf("model: {family: gpt2}\nplanner: {order_share: 1.5}"),
                 {"conf.yaml", "planner.order_share", "must be in [0, 1], got 1.5"});
  ExpectMentions(ErrorOf("model: {family: gpt2}", {"planner.merge.search_max_nodes=-1"}),
                 {"planner.merge.search_max_nodes", "must be at least 0"});
}

// Every remat key, with the nesting of remat::RematParams; the alignment is the planner's.
TEST(Config, ReadsTheRematSection) {
  config::Config c = ParseConfig(R"(model: {family: gpt2}
planner: {alignment: 64}
remat:
  method: greedy
  time_limit_s: 5
  base_order: lescea
  start_orders: [program, xla-dfs]
  start_ties: true
  rule: {rng_state_kept: true, state_update_skipped: false}
  best: {build: [greedy, checkpoint], improve: [blocks, ilp], picks: 3}
  sweep: {build: [lookahead], improve: []}
  greedy:
    max_steps: 11
    stall_steps: 12
    max_chain: 3
    score: peak
    count_siblings: false
    copy_before_writes: false
    prune_attempts: 13
    swap_attempts: 14
    swap_repair_steps: 15
    hold_inputs: false
    hold_descent: false
  checkpoint: {max_segments_factor: 1.5, cuts: insensitive}
  blocks:
    rounds: 2
    group_ops: 7
    split_steps: 5
    max_candidates: 9
    search_nodes: 1234
    verifications: 3
  blocks_dp:
    group_ops: 5
    targets: 4
    retries: 3
    candidates: 2
    max_crossing: 0.5
    quantum: 4096
    polish: false
  overhead_bound: {cuts: 2, time_limit_s: 0.5, time_share: 0.75, in_sweep: true, max_nodes: 9,
    max_lp_iterations: 99}
  witness: {at_retries: true}
  order_bound: {enabled: false, max_nodes: 3, max_lp_iterations: 98, branch_max_nonzeros: 5,
                max_nonzeros: 7, time_limit_s: 0.25, input_levels: 3}
  ilp: {max_ops: 16, max_computations: 3, window_stages: 17, window_time_limit_s: 2.5,
        window_max_nodes: 11, window_sweeps: 3, max_lp_iterations: 1234, max_nodes: 77}
  lns: {max_ops: 50, rounds: 21, ruin_runs: 2, choice_width: 4, repair_steps: 9,
        accept_slack: 0.25, layout_max_nodes: 33, seed: 7}
  lookahead:
    exponents: [0, 1]
    target_slacks: [0.02]
    target_retries: 5
    hints: 6
    refine_attempts: 7
    max_computations_factor: 8
    whole_graph: true
  fit:
    by: theoretical
    retries: 2
    retry_steps: [0.75, 0.125]
    refine_retries: 1
    search_time_limit_s: 0.5
    search_max_nodes: 1000
    search_max_work: 7000
    search_wide: false
    search_wide_max_buffers: 3
    search_at_budget: false
    long_chain: 32
    fallback_base_orders: [program]
    alone: []
    prune:
      search: {multiple_preorders: true}
    repack:
      subproblem_max_nodes: 500
      search: {multiple_preorders: false, random_preorders: 2}
)",
                                 "c.yaml");
  const remat::RematParams& r = c.remat;
  EXPECT_EQ(r.method, "greedy");
  EXPECT_DOUBLE_EQ(r.time_limit_s, 5);
  EXPECT_EQ(r.base_order, "lescea");
  EXPECT_EQ(r.start_orders, (std::vector<std::string>{"program", "xla-dfs"}));
  EXPECT_TRUE(r.rule.rng_state_kept);
  EXPECT_FALSE(r.rule.state_update_skipped);
  EXPECT_EQ(r.greedy.max_steps, 11);
  EXPECT_EQ(r.greedy.stall_steps, 12);
  EXPECT_EQ(r.greedy.max_chain, 3);
  EXPECT_EQ(r.greedy.score, "peak");
  EXPECT_FALSE(r.greedy.count_siblings);
  EXPECT_FALSE(r.greedy.copy_before_writes);
  EXPECT_EQ(r.greedy.prune_attempts, 13);
  EXPECT_EQ(r.greedy.swap_attempts, 14);
  EXPECT_EQ(r.greedy.swap_repair_steps, 15);
  EXPECT_FALSE(r.greedy.hold_inputs);
  EXPECT_FALSE(r.greedy.hold_descent);
  EXPECT_DOUBLE_EQ(r.checkpoint.max_segments_factor, 1.5);
  EXPECT_EQ(r.checkpoint.cuts, "insensitive");
  EXPECT_EQ(r.blocks.rounds, 2);
  EXPECT_EQ(r.blocks.group_ops, 7);
  EXPECT_EQ(r.blocks.split_steps, 5);
  EXPECT_EQ(r.blocks.max_candidates, 9);
  EXPECT_EQ(r.blocks.search_nodes, 1234);
  EXPECT_EQ(r.blocks.verifications, 3);
  EXPECT_EQ(r.blocks_dp.group_ops, 5);
  EXPECT_EQ(r.blocks_dp.targets, 4);
  EXPECT_EQ(r.blocks_dp.retries, 3);
  EXPECT_EQ(r.blocks_dp.candidates, 2);
  EXPECT_DOUBLE_EQ(r.blocks_dp.max_crossing, 0.5);
  EXPECT_EQ(r.blocks_dp.quantum, 4096);
  EXPECT_FALSE(r.blocks_dp.polish);
  EXPECT_EQ(r.overhead_bound.cuts, 2);
  EXPECT_DOUBLE_EQ(r.overhead_bound.time_limit_s, 0.5);
  EXPECT_DOUBLE_EQ(r.overhead_bound.time_share, 0.75);
  EXPECT_TRUE(r.overhead_bound.in_sweep);
  EXPECT_TRUE(r.witness.at_retries);
  EXPECT_EQ(r.best.build, (std::vector<std::string>{"greedy", "checkpoint"}));
  EXPECT_EQ(r.best.improve, (std::vector<std::string>{"blocks", "ilp"}));
  EXPECT_EQ(r.best.picks, 3);
  EXPECT_EQ(r.sweep.build, (std::vector<std::string>{"lookahead"}));
  EXPECT_TRUE(r.sweep.improve.empty());
  EXPECT_TRUE(r.fit.alone.empty());
  EXPECT_EQ(r.ilp.max_ops, 16);
  EXPECT_EQ(r.ilp.max_computations, 3);
  EXPECT_EQ(r.ilp.window_stages, 17);
  EXPECT_DOUBLE_EQ(r.ilp.window_time_limit_s, 2.5);
  EXPECT_EQ(r.ilp.window_max_nodes, 11);
  EXPECT_EQ(r.ilp.window_sweeps, 3);
  EXPECT_EQ(r.ilp.max_lp_iterations, 1234);
  EXPECT_EQ(r.ilp.max_nodes, 77);
  EXPECT_EQ(r.lns.max_ops, 50);
  EXPECT_EQ(r.lns.rounds, 21);
  EXPECT_EQ(r.lns.ruin_runs, 2);
  EXPECT_EQ(r.lns.choice_width, 4);
  EXPECT_EQ(r.lns.repair_steps, 9);
  EXPECT_DOUBLE_EQ(r.lns.accept_slack, 0.25);
  EXPECT_EQ(r.lns.layout_max_nodes, 33);
  EXPECT_EQ(r.lns.seed, 7);
  EXPECT_EQ(r.overhead_bound.max_nodes, 9);
  EXPECT_EQ(r.overhead_bound.max_lp_iterations, 99);
  EXPECT_FALSE(r.order_bound.enabled);
  EXPECT_EQ(r.order_bound.max_nodes, 3);
  EXPECT_EQ(r.order_bound.branch_max_nonzeros, 5);
  EXPECT_EQ(r.order_bound.max_lp_iterations, 98);
  EXPECT_EQ(r.order_bound.max_nonzeros, 7);
  EXPECT_DOUBLE_EQ(r.order_bound.time_limit_s, 0.25);
  EXPECT_EQ(r.order_bound.input_levels, 3);
  EXPECT_EQ(r.fit.by, "theoretical");
  EXPECT_EQ(r.lookahead.exponents, (std::vector<double>{0, 1}));
  EXPECT_EQ(r.lookahead.target_slacks, (std::vector<double>{0.02}));
  EXPECT_EQ(r.lookahead.target_retries, 5);
  EXPECT_EQ(r.lookahead.hints, 6);
  EXPECT_EQ(r.lookahead.refine_attempts, 7);
  EXPECT_EQ(r.lookahead.max_computations_factor, 8);
  EXPECT_TRUE(r.lookahead.whole_graph);
  EXPECT_TRUE(r.start_ties);
  EXPECT_EQ(r.fit.retries, 2);
  EXPECT_EQ(r.fit.retry_steps, (std::vector<double>{0.75, 0.125}));
  EXPECT_EQ(r.fit.refine_retries, 1);
  EXPECT_DOUBLE_EQ(r.fit.search_time_limit_s, 0.5);
  EXPECT_EQ(r.fit.search_max_nodes, 1000);
  EXPECT_EQ(r.fit.search_max_work, 7000);
  EXPECT_FALSE(r.fit.search_wide);
  EXPECT_EQ(r.fit.search_wide_max_buffers, 3);
  EXPECT_FALSE(r.fit.search_at_budget);
  EXPECT_EQ(r.fit.long_chain, 32);
  EXPECT_EQ(r.fit.fallback_base_orders, (std::vector<std::string>{"program"}));
  EXPECT_EQ(r.fit.repack.subproblem_max_nodes, 500);
  EXPECT_FALSE(r.fit.repack.search.multiple_preorders);
  EXPECT_EQ(r.fit.repack.search.random_preorders, 2);
  EXPECT_TRUE(r.fit.repack.search.bottom_left);  // unset: its default
  EXPECT_TRUE(r.fit.prune.search.multiple_preorders);
  EXPECT_EQ(r.fit.prune.search.random_preorders, 0);  // unset: the prune's default
  EXPECT_EQ(r.alignment, 64);
  // Unset, every field keeps its default.
  const remat::RematParams d = ParseConfig("model: {family: gpt2}", "c").remat;
  const remat::RematParams defaults;
  EXPECT_EQ(d.method, defaults.method);
  EXPECT_EQ(d.greedy.swap_attempts, defaults.greedy.swap_attempts);
  EXPECT_EQ(d.best.build, defaults.best.build);
  EXPECT_EQ(d.best.improve, defaults.best.improve);
  EXPECT_EQ(d.fit.prune.repair_margins, defaults.fit.prune.repair_margins);
  EXPECT_TRUE(d.fit.repack.search.multiple_preorders);
  EXPECT_EQ(d.fit.repack.search.random_preorders, 4);
  EXPECT_FALSE(d.fit.prune.search.multiple_preorders);
  EXPECT_EQ(d.fit.prune.search.random_preorders, 0);
  EXPECT_TRUE(d.rule.state_update_skipped);
}

TEST(ConfigRejects, BadRematKeysAndValuesNameTheField) {
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {greedy: {max_step: 3}}"),
                 {"remat.greedy.max_step", "did you mean remat.greedy.max_steps?"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {method: magic}"),
                 {"remat.method", "must be one of best, greedy, checkpoint, lookahead, ilp"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {lookahead: {exponents: [0, -1]}}"),
                 {"remat.lookahead.exponents[1]", "must not be negative"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {lookahead: {target_slacks: 0.1}}"),
                 {"remat.lookahead.target_slacks", "non-empty list"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {fit: {retry_steps: [0.5, 1.5]}}"),
                 {"conf.yaml", "remat.fit.retry_steps[1]", "must be in [0, 1], got 1.5"});
  ExpectMentions(ErrorOf("model: {family: gpt2}", {"remat.fit.retry_steps=[]"}),
                 {"remat.fit.retry_steps", "--set remat.fit.retry_steps=[]", "non-empty list"});
  ExpectMentions(ErrorOf("model: {family: gpt2}", {"remat.fit.retry_steps=[nan]"}),
                 {"remat.fit.retry_steps[0]", "must be a number"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {fit: {retry_step: 0.5}}"),
                 {"remat.fit.retry_step", "did you mean remat.fit.retry_steps?"});
  ExpectMentions(ErrorOf("model: {family: gpt2}", {"remat.base_order=nope"}),
                 {"remat.base_order", "--set remat.base_order=nope", "must be one of"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {greedy: {score: area}}"),
                 {"remat.greedy.score", "log, peak, lifetime"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {rule: {rng: true}}"),
                 {"remat.rule.rng", "unknown key", "rng_state_kept, state_update_skipped"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {time_limit_s: -1}"),
                 {"remat.time_limit_s", "must not be negative"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {ilp: {max_computations: 0}}"),
                 {"remat.ilp.max_computations", "must be positive"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {fit: {fallback_base_orders: [xla]}}"),
                 {"remat.fit.fallback_base_orders[0]", "must be one of"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {fit: {fallback_base_orders: program}}"),
                 {"remat.fit.fallback_base_orders", "must be a list of order names"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {greedy: 3}"),
                 {"remat.greedy", "must be a mapping"});
  // A builder where an improver goes, and the reverse.
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {best: {improve: [greedy]}}"),
                 {"remat.best.improve[0]", "must be one of blocks, blocks-dp, witness, ilp"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {best: {build: [ilp]}}"),
                 {"remat.best.build[0]", "must be one of greedy, checkpoint, lookahead"});
}

// The flat keys of earlier configs are refused with where they went, as the planner's were.
TEST(ConfigRejects, FlatRematKeysHaveMoved) {
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {greedy_max_steps: 3}"),
                 {"remat.greedy_max_steps", "has moved to remat.greedy.max_steps"});
  ExpectMentions(
      ErrorOf("model: {family: gpt2}", {"remat.layout_search_time_limit_s=2"}),
      {"remat.layout_search_time_limit_s", "has moved to remat.fit.search_time_limit_s"});
  ExpectMentions(
      ErrorOf("model: {family: gpt2}\nplanner: {leaf_layout: {bottom_left: true}}"),
      {"planner.leaf_layout.bottom_left", "has moved to planner.leaf_layout.search.bottom_left"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {blocks_dp_max_crossing: 0.5}"),
                 {"has moved to remat.blocks_dp.max_crossing"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {witness_in_best: false}"),
                 {"remat.witness_in_best", "has moved to remat.best.improve"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nremat: {greedy_long_chain: 8}"),
                 {"has moved to remat.fit.long_chain"});
}

TEST(Config, AdamwDefaultsToTorchsWeightDecay) {
  EXPECT_DOUBLE_EQ(
      ParseConfig("model: {family: gpt2}\ntraining: {optimizer: adamw}", "c").training.weight_decay,
      0.01);
}

TEST(Config, OverridesApplyBeforeValidationAndCreateSections) {
  config::Config c =
      ParseConfig("model: {family: gpt2, batch: 1}", "c.yaml",
                  {"model.batch=4", "planner.partition.node_limit=7", "model.n_head=16"});
  EXPECT_EQ(c.model.batch, 4);
  EXPECT_EQ(c.planner.partition.node_limit, 7);
  EXPECT_EQ(c.model.n_head, 16);
  // A later --set wins; an override can also fix a value the file gets wrong.
  EXPECT_EQ(ParseConfig("model: {family: gpt2, n_head: 5}", "c", {"model.n_head=12"}).model.n_head,
            12);
}

TEST(ConfigRejects, UnknownKeyWithTheClosestValidOne) {
  ExpectMentions(
      ErrorOf("model:\n  family: gpt2\n  n_layers: 4\n"),
      {"conf.yaml", "model.n_layers", "line 3", "unknown key", "did you mean model.n_layer?"});
  ExpectMentions(ErrorOf("modle: {family: gpt2}"), {"modle", "did you mean model?"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nplanner: {partition: {node_limt: 3}}"),
                 {"planner.partition.node_limt", "did you mean planner.partition.node_limit?"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nplanner: {node_limit: 3}"),
                 {"planner.node_limit", "has moved to planner.partition.node_limit"});
  // Seconds are *_s keys everywhere; the unit-less spellings say where they went.
  ExpectMentions(ErrorOf("model: {family: gpt2}\nplanner: {time_limit: 3}"),
                 {"conf.yaml", "planner.time_limit", "has moved to planner.time_limit_s"});
  ExpectMentions(ErrorOf("model: {family: gpt2}", {"planner.leaf_layout.time_limit=1"}),
                 {"planner.leaf_layout.time_limit", "--set planner.leaf_layout.time_limit=1",
                  "has moved to planner.leaf_layout.time_limit_s"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nplanner: {solver_overshoot: 1}"),
                 {"has moved to planner.solver_overshoot_s"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\nplanner: {leaf_order: 3}"),
                 {"planner.leaf_order", "must be a mapping"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\ntraining: {optimiser: sgd}"),
                 {"training.optimiser", "did you mean training.optimizer?"});
}

TEST(ConfigRejects, UnknownKeyFromTheCommandLineNamesTheOverride) {
  ExpectMentions(ErrorOf("model: {family: gpt2}", {"model.batchsize=3"}),
                 {"model.batchsize", "--set model.batchsize=3", "did you mean model.batch?"});
}

TEST(ConfigRejects, KeysOfAnotherFamilyOrOptimizer) {
  ExpectMentions(ErrorOf("model: {family: resnet, n_head: 4}"),
                 {"model.n_head", "does not apply to family resnet"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\ntraining: {optimizer: adam, momentum: 0.9}"),
                 {"training.momentum", "does not apply to optimizer adam"});
}

TEST(ConfigRejects, UnknownFamilyOptimizerDtypeOrDevice) {
  ExpectMentions(ErrorOf("model: {family: gpt3}"),
                 {"model.family", "unknown value 'gpt3'", "gpt2", "mobilenet_v2"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\ntraining: {optimizer: lamb}"),
                 {"training.optimizer", "'lamb'", "sgd, adam or adamw"});
  ExpectMentions(ErrorOf("model: {family: gpt2, dtype: float8}"), {"model.dtype", "float8"});
  ExpectMentions(ErrorOf("model: {family: gpt2, device: tpu}"), {"model.device", "tpu"});
  ExpectMentions(ErrorOf("model: {n_layer: 2}"), {"model.family", "is missing"});
}

TEST(ConfigRejects, NonPositiveOrMistypedDimensions) {
  ExpectMentions(ErrorOf("model: {family: gpt2, n_layer: 0}"),
                 {"model.n_layer", "must be positive", "0"});
  ExpectMentions(ErrorOf("model: {family: gpt2, batch: -2}"), {"model.batch", "must be positive"});
  ExpectMentions(ErrorOf("model: {family: resnet, image_size: 0}"),
                 {"model.image_size", "positive"});
  ExpectMentions(ErrorOf("model: {family: gpt2, n_embd: big}"),
                 {"model.n_embd", "must be an integer", "'big'"});
  ExpectMentions(ErrorOf("model: {family: gpt2, n_embd: [1, 2]}"), {"model.n_embd", "list"});
  ExpectMentions(ErrorOf("model: {family: gpt2}", {"model.batch=0"}),
                 {"model.batch", "--set model.batch=0", "positive"});
}

TEST(ConfigRejects, EmbeddingWidthNotDivisibleByHeads) {
  ExpectMentions(ErrorOf("model: {family: gpt2, n_embd: 1600, n_head: 24}"),
                 {"model.n_embd", "1600", "not divisible by model.n_head (24)"});
}

TEST(ConfigRejects, OtherInconsistentShapes) {
  ExpectMentions(ErrorOf("model: {family: gpt2, seq_len: 2048}"), {"model.seq_len", "n_positions"});
  ExpectMentions(ErrorOf("model: {family: vit, image_size: 100}"),
                 {"model.image_size", "patch_size"});
  ExpectMentions(ErrorOf("model: {family: resnet, depth: 20}"), {"model.depth", "18, 34, 50"});
  ExpectMentions(ErrorOf("model: {family: alexnet, image_size: 32}"),
                 {"model.image_size", "too small"});
  ExpectMentions(ErrorOf("model: {family: gpt2, dropout: 1.5}"), {"model.dropout", "[0, 1)"});
  // The segmentation families: five pools (fcn8, segnet) or four exact halvings (unet).
  ExpectMentions(ErrorOf("model: {family: fcn8, image_size: 31}"),
                 {"model.image_size", "too small"});
  ExpectMentions(ErrorOf("model: {family: segnet, image_size: 16}"),
                 {"model.image_size", "too small"});
  ExpectMentions(ErrorOf("model: {family: unet, image_size: 8}"),
                 {"model.image_size", "too small"});
  ExpectMentions(ErrorOf("model: {family: unet, image_size: 40}"),
                 {"conf.yaml", "model.image_size", "line 1", "40", "not a multiple of 16"});
  ExpectMentions(ErrorOf("model: {family: segnet, dropout: 0.5}"),
                 {"model.dropout", "does not apply to family segnet"});
  ExpectMentions(ErrorOf("model: {family: unet, depth: 16}"),
                 {"model.depth", "does not apply to family unet"});
  ExpectMentions(ErrorOf("model: {family: fcn8, dropout: 1}"), {"model.dropout", "[0, 1)"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\ntraining: {optimizer: sgd, nesterov: true}"),
                 {"training.nesterov", "momentum"});
}

TEST(ConfigRejects, YamlSyntaxErrorsWithLineAndColumn) {
  ExpectMentions(ErrorOf("model:\n  family: gpt2\n  n_layer: [1, 2\n"),
                 {"conf.yaml", "YAML syntax error at line", "column"});
  const std::string e = ErrorOf("model:\n  family: gpt2\n bad: : x\n");
  ExpectMentions(e, {"conf.yaml", "line 3", "column"});
}

TEST(ConfigRejects, MalformedOverrides) {
  ExpectMentions(ErrorOf("model: {family: gpt2}", {"model.batch"}),
                 {"--set model.batch", "KEY=VALUE"});
  ExpectMentions(ErrorOf("model: {family: gpt2}", {"model..batch=2"}), {"empty key segment"});
  ExpectMentions(ErrorOf("model: {family: gpt2}", {"model.family.x=2"}),
                 {"model.family", "not a section"});
}

TEST(ConfigRejects, ASectionThatIsNotAMapping) {
  ExpectMentions(ErrorOf("model: 3"), {"model", "mapping"});
  ExpectMentions(ErrorOf("- 1\n- 2\n"), {"conf.yaml", "mapping"});
}

TEST(ConfigRejects, SizesAboveTheByteMaximumAndAlignmentsAbove2To30) {
  EXPECT_EQ(ErrorOf("model: {family: gpt2, vocab: 1125899906842625}"),
            "conf.yaml: model.vocab (line 1): must be at most 1125899906842624, got "
            "1125899906842625");
  EXPECT_EQ(ErrorOf("model: {family: gpt2}\nplanner: {alignment: 2147483648}"),
            "conf.yaml: planner.alignment (line 2): must be at most 1073741824, got 2147483648");
  EXPECT_EQ(ErrorOf("model: {family: mobilenet_v2, width_mult: 1e300}"),
            "conf.yaml: model.width_mult (line 1): must be at most 1024, got 1e300");
}

TEST(IntegerModelKeys, AreTheIntegerKeysTheFamilyReads) {
  ModelConfig m = ModelDefaults(Family::kResnet);
  m.batch = 7;
  const std::vector<std::pair<std::string, std::int64_t>> expected = {{"model.batch", 7},
                                                                      {"model.image_size", 224},
                                                                      {"model.num_classes", 1000},
                                                                      {"model.depth", 18}};
  EXPECT_EQ(IntegerModelKeys(m), expected);
}

TEST(PlanningOverrides, SetThePlannerAndRematSectionsOfAGraphFile) {
  const config::Planning s =
      ParsePlanningOverrides({"planner.alignment=256", "planner.partition.node_limit=60",
                              "remat.greedy.max_steps=7", "remat.rule.rng_state_kept=true"},
                             "g.json");
  EXPECT_EQ(s.planner.alignment, 256);
  EXPECT_EQ(s.planner.partition.node_limit, 60);
  EXPECT_EQ(s.remat.greedy.max_steps, 7);
  EXPECT_TRUE(s.remat.rule.rng_state_kept);
  EXPECT_EQ(s.remat.alignment, 256);  // the planner's
  const config::Planning defaults = ParsePlanningOverrides({}, "g.json");
  const remat::RematParams remat_defaults;
  EXPECT_EQ(defaults.remat.greedy.max_steps, remat_defaults.greedy.max_steps);
}

TEST(PlanningOverrides, RejectModelTrainingAndUnknownKeysNamingTheFileAndTheSet) {
  for (const char* bad : {"model.batch=4", "training.optimizer=sgd", "remat.greedy_max_step=3"}) {
    try {
      ParsePlanningOverrides({bad}, "g.json");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("g.json"), std::string::npos) << what;
      EXPECT_NE(what.find(std::string("--set ") + bad), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace roam::gen
