#!/usr/bin/env python3
"""Random legal tiled CUDA kernels for differential testing of tilepipe.

    gen.py --seed N [--kernels K] [--only I,J,...] [--labels CLASS,...] [--with-label L] -o batch.cu
           [--manifest batch.tsv]

Writes one .cu file (a "batch") with K kernels, each with a host driver, and one main() that runs
them all (or the ids named on its command line) and prints `<kernel-id> <labels> <hash>` per
kernel. Kernel i of seed N is `s<N>k<i>`; it depends only on (N, i), so `--only i` reproduces it
alone. Every kernel is legal for the launches its driver makes: deterministic, race-free and in
bounds, so any difference between the original and a rewrite is the rewrite's. `--labels` makes
every kernel one of the given names classes (NAMES_CLASSES), kernel i the (i mod count)-th: such a
batch is reproduced with the same --labels.

The manifest has one line per kernel: id, labels, and a short description of the main case.
Python 3 standard library only.
"""
import argparse
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Element types: size in bytes, zero, fills for guarded copies, the scalar 'half'.
# The 16-byte vector of an element type, and how many elements it holds (`vector-read`).
VECTOR_OF = {'float': ('float4', 4), 'int': ('int4', 4), 'double': ('double2', 2)}

TYPES = {
    'float': dict(size=4, zero='0.0f', fills=['0.0f', '0.0f', '1.0f', '-0.0f', '0'], half='0.5f'),
    'double': dict(size=8, zero='0.0', fills=['0.0', '0.0', '2.0', '0'], half='0.5'),
    'int': dict(size=4, zero='0', fills=['0', '0', '-1', '7'], half=None),
    'float2': dict(size=8, zero='make_float2(0.0f, 0.0f)',
                   fills=['make_float2(0.0f, 0.0f)', 'float2{}', 'float2{}', 'float2{}',
                          'make_float2(1.0f, -1.0f)'],
                   half='0.5f'),
    'float4': dict(size=16, zero='make_float4(0.0f, 0.0f, 0.0f, 0.0f)',
                   fills=['make_float4(0.0f, 0.0f, 0.0f, 0.0f)', 'float4{}', 'float4{}', 'float4{}',
                          'make_float4(1.0f, 2.0f, 3.0f, 4.0f)'],
                   half='0.5f'),
}

MIB = 1 << 20
SRC_BYTES = 16 * MIB      # aim for a read-only source
ALIAS_BYTES = 64 * MIB    # at most, for a kernel with a source every block writes its own region of

# The shape classes of names (Kernel.apply_names, NamesMatmulKernel): declarations placed around
# each kind of text the rewrite moves (tiles hoisted before the loop, index declarations written
# again before the compute phase, the copy phase, condition and increments in the lambdas that
# fetch ahead, element types and strides in the host launcher, launch sites calling the launcher),
# where they would capture or hide a name if the rewrite bound it elsewhere. A kernel gets one at
# NAMES_RATE, drawn from a generator of its own (names_class): every other kernel of a seed stays
# as it was. gen.py --labels forces them.
NAMES_CLASSES = {'shadow-extent': 20, 'shadow-index': 20, 'shadow-param': 15, 'shadow-step': 15,
                 'shadow-typedef': 15, 'samename-ns': 15}
NAMES_RATE = 0.08
NAMES_MATMUL = ('shadow-typedef', 'samename-ns')   # matmul-like kernels whose tiles tensor copies take


def names_class(seed, idx, force=None):
    """The names class of kernel idx of seed: None for most; with force (a list of classes), kernel
    idx gets force[idx % len(force)]."""
    if force:
        return force[idx % len(force)]
    r = random.Random('tilepipe-fuzz-names:%d:%d' % (seed, idx))
    if r.random() >= NAMES_RATE:
        return None
    return pick(r, NAMES_CLASSES)


def pick(r, weights):
    """Weighted choice from {value: weight}."""
    items = list(weights.items())
    total = sum(w for _, w in items)
    x = r.random() * total
    for v, w in items:
        x -= w
        if x < 0:
            return v
    return items[-1][0]


class Src:
    """A global source buffer: one kernel parameter."""

    def __init__(self, name, T):
        self.name, self.T = name, T
        self.tiles = []
        self.alias = None        # None, 'next', 'cur': the compute phase writes this buffer
        self.hidden = None       # None, 'param', 'global': written through another name
        self.base_form = 'mod'   # 'mod': (blockIdx.x % nr) * rs; 'lin': blockIdx.x * rs; 'lit'
        self.mis = 0             # elements the pointer is off its allocation
        self.guard_n = None      # name of the bound parameter when guarded


class Tile:
    pass


class Kernel:
    def __init__(self, seed, idx):
        self.seed, self.idx = seed, idx
        self.r = random.Random('tilepipe-fuzz:%d:%d' % (seed, idx))
        self.id = 's%dk%d' % (seed, idx)
        self.fn = 'k_' + self.id
        self.P = self.id.upper() + '_'
        self.labels = set()
        self.params = []   # (C declaration, name)
        self.lines = []    # kernel body lines (indented by the emitter)
        self.host = []
        # Names classes (apply_names): nothing here draws from self.r, so that a kernel without
        # one is what it was before they existed.
        self.names = None
        self.dyn = None  # tiles in dynamic shared memory (decide_dyn)
        self.nr = random.Random('tilepipe-fuzz-names-shape:%d:%d' % (seed, idx))
        self.nm = {}           # what apply_names chose
        # Copy loops over a counter declared before the tiled loop (`counter-loop`): drawn from a
        # stream of their own, so that a kernel without one is what it was before they existed.
        self.cr = random.Random('tilepipe-fuzz-counter:%d:%d' % (seed, idx))
        self.counter_decls = []  # their declarations, placed right before the tiled loop
        self.ns = None         # the namespace the kernel is written in (launched as ns::kernel)
        self.ns_decls = []     # declarations of namespace scope before the kernel, in self.ns
        self.extra_args = {}   # host arguments of parameters the names classes add

    def L(self, *labels):
        for l in labels:
            self.labels.add(l)

    def kernel_head(self):
        """`__global__ void`, with `__launch_bounds__(<threads>)` for blocks of more than 256 threads.

        Without bounds ptxas may give a thread up to 255 registers: 256 threads always fit in the 64 K
        registers of a block (256 x 256), a block of 1024 only with 64 registers a thread at most. An
        original that uses more fails to launch ("too many resources requested for launch"), so it
        is told its block size (every launch of a kernel uses the one block shape). Kernels of 256
        threads or fewer are written as before (no draw is added: the others stay as they were).
        """
        if self.NT > 256:
            self.L('launch-bounds')
            return '__global__ void __launch_bounds__(%d)' % self.NT
        return '__global__ void'

    # ---------------------------------------------------------------- choices
    def choose(self):
        r = self.r
        self.T = pick(r, {'float': 40, 'double': 14, 'int': 16, 'float2': 15, 'float4': 15})
        self.ty = TYPES[self.T]
        self.L(self.T)
        self.dims = pick(r, {1: 45, 2: 40, 3: 15})
        if self.dims == 1:
            self.B = (pick(r, {32: 15, 64: 25, 128: 30, 256: 30}), 1, 1)
        elif self.dims == 2:
            self.B = pick(r, {(16, 16): 30, (32, 8): 20, (8, 32): 10, (32, 4): 15, (64, 2): 8,
                              (8, 8): 10, (32, 32): 4, (16, 8): 10}) + (1,)
        else:
            self.B = pick(r, {(8, 8, 4): 30, (32, 4, 2): 25, (16, 4, 4): 20, (4, 4, 16): 10,
                              (8, 4, 8): 15})
        self.NT = self.B[0] * self.B[1] * self.B[2]
        self.L('%dd' % self.dims)

        # Loop form and induction variables.
        self.form = pick(r, {'trailing': 70, 'rotated': 30})
        self.L(self.form)
        self.iv = pick(r, {'counter': 36, 'down': 6, 'multi': 14, 'while': 14, 'pointer': 5,
                           'pointer-init': 5, 'gridstride': 10, 'twoiv': 10})
        self.L('iv-' + self.iv)

        # Tiles.
        ntiles = pick(r, {1: 50, 2: 35, 3: 15})
        if ntiles > 1:
            self.L('multi-tile')
        self.srcs = []
        self.tiles = []
        budget = pick(r, {16384: 80, 24576: 12, 40000: 8})  # bytes of one stage of all tiles
        # A first tile so wide that two stages do not fit in 48 KiB of static shared memory
        # (`big-stages`): drawn from a generator of its own, so that a seed gives the kernel it gave
        # before the form existed, or that kernel with its first tile so widened.
        big = random.Random('tilepipe-fuzz-big:%d:%d' % (self.seed, self.idx)).random() < 0.05
        if big:
            budget = 48 * 1024
        for i in range(ntiles):
            t = self.make_tile(i, budget, wide=big and i == 0)
            if t is None:
                break
            self.tiles.append(t)
            budget -= t.bytes
        if not self.tiles:
            t = self.make_tile(0, 1 << 30, force_small=True)
            self.tiles.append(t)
        # Two stages that 48 KiB of static shared memory cannot hold: the stages lie in dynamic
        # shared memory, which a launcher asks for.
        if 2 * sum(t.bytes for t in self.tiles) > 48 * 1024:
            self.L('big-stages')

        # Sources: each tile its own, or two tiles of one source.
        for i, t in enumerate(self.tiles):
            if i > 0 and r.random() < 0.2:
                t.src = self.tiles[r.randrange(i)].src
                t.delta = r.choice([0, 1, 3, 17, 64])
                self.L('shared-source')
            else:
                t.src = Src('src%d' % len(self.srcs), self.T)
                t.delta = 0
                self.srcs.append(t.src)
            t.src.tiles.append(t)
        for s in self.srcs:
            s.base_form = pick(r, {'mod': 60, 'lin': 20, 'lit': 20})
            s.mis = pick(r, {0: 70, 1: 10, 2: 5, 3: 5, 4: 10})
            if s.mis:
                self.L('misaligned')

        # Offsets added to the first tile's index.
        self.offi = pick(r, {None: 80, 'param': 4, 'local': 4, 'ref': 2, 'ptr': 2,
                             'constexpr': 2, 'array': 2, 'minmax': 4})
        self.offv = None
        if self.iv in ('counter', 'while', 'twoiv') and r.random() < 0.1:
            self.offv = pick(r, {'ptr': 30, 'lambda': 25, 'devfn': 25, 'direct': 20})
        if self.offi:
            self.L('off-' + self.offi)
        if self.offv:
            self.L('offvar-' + self.offv)

        # Loop bound.
        if self.iv in ('counter', 'down', 'while', 'pointer', 'pointer-init', 'twoiv', 'multi'):
            self.bound = pick(r, {'param': 60, 'local': 14, 'ref': 4, 'mem-param': 3,
                                  'mem-array': 3, 'devfn': 4, 'constexpr': 4, 'macro': 8})
        else:
            self.bound = 'param'
        self.L('bound-' + self.bound)
        self.inc = 'plain'
        if self.iv in ('counter', 'while'):
            self.inc = pick(r, {'plain': 84, 'lambda': 8, 'devfn': 8})
            if self.inc != 'plain':
                self.L('inc-' + self.inc)

        # Guards.
        for t in self.tiles:
            t.guard = pick(r, {None: 62, 'ternary': 22, 'ifelse': 12, 'clamp': 4})
            if t.guard:
                t.fill = r.choice(self.ty['fills'])
                self.L('guard-' + t.guard)
        # Guards are per source: one bound parameter each, and every tile of a guarded source is
        # guarded (its buffer ends at the bound).
        for s in self.srcs:
            if any(t.guard for t in s.tiles):
                s.guard_n = 'n_' + s.name
                for t in s.tiles:
                    if not t.guard:
                        t.guard = 'ternary'
                        t.fill = self.ty['zero']
                        self.L('guard-ternary')
        for t in self.tiles:
            if t.guard == 'clamp' and self.iv in ('pointer', 'pointer-init'):
                t.guard = 'ternary'
                self.L('guard-ternary')

        # Early exit: whole warps of rows leave before the loop.
        self.exit_rows = 0
        if (self.dims >= 2 and self.B[1] >= 2 and r.random() < 0.12 and
                all(t.dims >= 2 and t.ys == 'exact' and not t.linear for t in self.tiles)):
            # Whole warps leave: rows of whole warps, or (3-D) every row a whole number of warps.
            bx_, by_, bz_ = self.B
            cands = [k for k in range(1, by_) if (k * bx_) % 32 == 0 and (bz_ == 1 or bx_ % 32 == 0)]
            if cands:
                self.exit_rows = r.choice(cands)
                self.L('early-exit')

        # Stores in the compute phase.
        self.store = None
        if r.random() < 0.4:
            self.store = pick(r, {'direct': 25, 'ptrcopy': 15, 'lambda': 15, 'devfn': 15, 'ref': 15,
                                  'devglobal': 15})
            self.L('store-' + self.store)
            # What it writes: a separate output, or a source (visible or through another name).
            cand = [s for s in self.srcs if not any(t.guard for t in s.tiles)]
            self.store_target = 'out'
            if cand and r.random() < 0.5:
                s = r.choice(cand)
                self.store_target = s
                s.alias = pick(r, {'next': 60, 'cur': 40})
                if self.iv in ('down', 'gridstride', 'multi'):
                    s.alias = 'cur'
                if self.store == 'devglobal':
                    s.hidden = 'global'
                elif r.random() < 0.3:
                    s.hidden = 'param'
                if self.iv == 'pointer-init':
                    self.iv = 'pointer'
                    self.labels.discard('iv-pointer-init')
                    self.L('iv-pointer')
                self.L('alias-' + s.alias)
                self.L('alias-hidden' if s.hidden else 'alias-visible')
                if s.hidden:
                    s.annotate = r.random() < 0.5
                    self.L('noalias-annotated' if s.annotate else 'noalias-assumed')
                s.base_form = 'lin'
        # A store only some architectures compile (tilepipe parses for sm_90; the rewrite runs from
        # sm_80): the tool must refuse every such loop (arch-dependent). Drawn from a generator of
        # its own, so that the kernels of every seed stay as they were without it.
        self.store_arch = None
        if self.store and random.Random(self.id + ':arch').random() < 0.12:
            self.store_arch = random.Random(self.id + ':arch-form').choice(
                ['defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800', '__CUDA_ARCH__ < 900'])
            self.L('store-arch')
        self.red = r.random() < 0.15
        if self.red:
            self.L('post-red')
        self.nested = r.random() < 0.06
        if self.nested:
            self.L('nested')
        self.devfn_loop = r.random() < 0.1
        self.template = not self.devfn_loop and r.random() < 0.08
        if self.template:
            self.L('template')
        self.stages = r.choice([2, 4, 5, 8]) if r.random() < 0.12 else 0
        if self.stages:
            self.L('stages-annotated')
        self.helper_index = r.random() < 0.08
        if self.helper_index:
            self.L('helper-index')
        self.peek = r.random() < 0.04 and any(t.dims == 1 for t in self.tiles)
        if self.peek:
            self.L('tile-to-devfn')
        self.shfl = self.T in ('float', 'double', 'int') and r.random() < 0.08
        if self.shfl:
            self.L('post-shfl')
        for t in self.tiles:
            t.bdim_step = (t.dims == 1 and not t.linear and t.xs == 'exact' and t.walk == 'x'
                           and r.random() < 0.25)
            if t.bdim_step:
                self.L('blockdim')
        if self.devfn_loop:
            self.L('devfn-loop')
        self.tile_in_body = r.random() < 0.12
        if self.tile_in_body:
            self.L('tile-in-body')
        self.barrier = pick(r, {'sync': 66, 'block': 10, 'cgsync': 8, 'ttb': 6, 'macro': 10})
        if self.barrier != 'sync':
            self.L('barrier-' + self.barrier)
        self.restrict = r.random() < 0.3 and not any(s.hidden for s in self.srcs)
        if self.restrict:
            self.L('restrict')
        self.macros = set()
        for m, p in (('size', 0.25), ('copy', 0.05), ('loop', 0.05), ('index', 0.08)):
            if r.random() < p:
                self.macros.add(m)
                self.L('macro-' + m)
        if 'loop' in self.macros and (self.iv != 'counter' or self.offv):
            self.macros.discard('loop')
            self.labels.discard('macro-loop')
        if 'loop' in self.macros and self.inc != 'plain':
            self.labels.discard('inc-' + self.inc)
            self.inc = 'plain'
        esz = self.ty['size']
        if self.red and sum(t.bytes for t in self.tiles) + self.NT * esz > 46000:
            self.red = False
            self.labels.discard('post-red')
        self.comments = set()
        for c, p in (('backslash', 0.12), ('block', 0.12), ('inline', 0.1)):
            if r.random() < p:
                self.comments.add(c)
                self.L('comment-' + c)

    # ---------------------------------------------------------------- names classes
    def force_iv(self, iv, plain=False):
        """Makes the loop's induction iv (a names class needs its form), keeping the kernel legal."""
        if self.iv != iv:
            self.labels.discard('iv-' + self.iv)
            self.iv = iv
            self.L('iv-' + iv)
        if self.inc != 'plain' and (plain or iv not in ('counter', 'while')):
            self.labels.discard('inc-' + self.inc)
            self.inc = 'plain'
        if self.offv and iv not in ('counter', 'while', 'twoiv'):
            self.drop_offv()
        if 'loop' in self.macros and (iv != 'counter' or plain):
            self.macros.discard('loop')
            self.labels.discard('macro-loop')

    def drop_offv(self):
        if self.offv:
            self.labels.discard('offvar-' + self.offv)
            self.offv = None

    def clean_for_names(self):
        if self.inc != 'plain':
            self.labels.discard('inc-' + self.inc)
            self.inc = 'plain'
        self.drop_offv()
        if self.store:
            for l in list(self.labels):
                if l.startswith(('store-', 'alias-', 'noalias-')):
                    self.labels.discard(l)
            self.store = None
            self.store_arch = None
            for s in self.srcs:
                s.alias = s.hidden = None
        for m in ('copy', 'loop'):
            if m in self.macros:
                self.macros.discard(m)
                self.labels.discard('macro-' + m)
        for c in self.comments:
            self.labels.discard('comment-' + c)
        self.comments = set()
        if self.bound not in ('param', 'local', 'macro'):
            self.labels.discard('bound-' + self.bound)
            self.bound = 'param'
            self.L('bound-param')
        if self.offi not in (None, 'param', 'local', 'minmax'):   # offsets read from memory
            self.labels.discard('off-' + self.offi)
            self.offi = None
        if self.peek:                                            # a tile handed to a function
            self.peek = False
            self.labels.discard('tile-to-devfn')
        if self.T in ('float2', 'float4'):   # a vector fill is a temporary the analysis does not follow
            for t in self.tiles:
                t.guard = None
            for s in self.srcs:
                s.guard_n = None
            for l in list(self.labels):
                if l.startswith('guard-'):
                    self.labels.discard(l)

    def apply_names(self):
        """Shapes the kernel for its names class (self.names), from a generator of its own (self.nr).

        shadow-extent: a tile declared in the body sized by a body constant that hides a constant of
          the kernel or of its namespace with another value (the rewrite, hoisting the tile before
          the loop, would size it by the outer one: expected name-binding); its twin
          (shadow-extent-twin) sizes the tile by the outer constant alone.
        shadow-index: a copy-phase local `const int base = t * STEP;` that hides a kernel parameter,
          a kernel local or a namespace constant of the same name, and an index built from it
          (`const int i = base_src0 + base + tx;`) that the copy reads and the compute phase reads
          too (both are declared again before the compute phase).
        shadow-param: a local of the loop body named as a kernel parameter that the moved text reads:
          in the copy phase an index declaration named as the loop bound's parameter
          (shadow-param-copy), or at the end of the compute phase, before the increments and the
          next copies, a constant named as a parameter of the copy or the condition
          (shadow-param-compute).
        shadow-step: a while loop whose tail increment `t += step` reads a body constant that hides
          the parameter `step` (expected induction-step); its twins read the parameter: in the tail
          with the body constant in a block of its own (shadow-step-twin), or in a for header with
          the body constant at the end of the compute phase (shadow-step-header).
        """
        n = self.nr
        c = self.names
        nm = self.nm
        need_ns = False
        # Most get none of the shapes the analysis refuses whatever the names (an increment through
        # a lambda, an offset changed through a pointer, stores that may alias, copies in macros,
        # index declarations in nested statements, a bound read from memory), so that the loop
        # reaches the names check; the rest keep what they drew (names-unclean).
        nm['clean'] = n.random() < 0.75
        if nm['clean']:
            self.clean_for_names()
        else:
            self.L('names-unclean')
        if c == 'shadow-extent':
            self.tile_in_body = True
            self.L('tile-in-body')
            if self.template:
                self.template = False
                self.labels.discard('template')
            t = n.choice(self.tiles)
            twin = n.random() < 0.4
            where = pick(n, {'ns': 35, 'enum': 15, 'kernel': 50})
            if twin:
                outer = t.ex
            else:
                outer = n.choice([v for v in (max(1, t.ex // 2), t.ex + 32, 2 * t.ex, 1) if v != t.ex])
            nm.update(ext_tile=t, ext_name=n.choice(['W', 'TW', 'EXT', 'kTile', 'TILE_X']),
                      ext_twin=twin, ext_where=where, ext_outer=outer,
                      ext_local=n.choice(['constexpr int', 'const int']),
                      ext_outer_kw=n.choice(['constexpr int', 'const int']))
            self.L('shadow-extent-twin' if twin else 'shadow-extent', 'outer-' + where)
            need_ns = where in ('ns', 'enum')
        elif c in ('shadow-index', 'shadow-param'):
            where = 'copy' if c == 'shadow-index' else n.choice(['copy', 'compute'])
            if c == 'shadow-param':
                self.L('shadow-param', 'shadow-param-' + where)
                nm['par_where'] = where
            if where == 'copy':
                if self.iv not in ('counter', 'while', 'down', 'gridstride'):
                    self.force_iv('counter')
                self.drop_offv()
                t = n.choice(self.tiles)
                per_elem = t.xs != 'loop' and t.ys not in ('loop', 'smaller') and n.random() < 0.7
                if c == 'shadow-index':
                    name = n.choice(['base', 'start', 'first', 'pos', 'origin'])
                    outer = pick(n, {'param': 40, 'local': 30, 'ns': 30})
                    self.L('shadow-index', 'outer-' + outer)
                    need_ns = outer == 'ns'
                else:
                    # The loop bound's parameter, which the condition in the fetch lambdas reads.
                    name = 'ntp' if self.bound == 'mem-param' else 'numTiles'
                    outer = 'bound'
                nm.update(ix_tile=t, ix_name=name, ix_var='i' if per_elem else 'gi',
                          ix_per_elem=per_elem, ix_outer=outer, ix_val=n.randrange(1, 1000),
                          ix_read_base=n.random() < 0.5,
                          ix_local_form=n.choice(['lit', 'block', 'var']))
                self.L('index-var-per-element' if per_elem else 'index-var-per-tile')
        elif c == 'shadow-step':
            form = pick(n, {'tail': 50, 'twin': 25, 'header': 25})
            if form == 'tail':
                local, param = n.choice([1, 1, 2]), n.choice([3, 4, 5, 7])
            else:
                param = n.choice([1, 1, 2])
                local = n.choice([v for v in (1, 2, 3, 5) if v != param])
            self.force_iv('counter' if form == 'header' else 'while', plain=True)
            nm.update(step_form=form, step_name=n.choice(['step', 'stride', 'inc']),
                      step_local=local, step_param=param,
                      step_place=n.choice(['copy', 'compute']) if form == 'tail' else 'compute')
            self.L({'tail': 'shadow-step', 'twin': 'shadow-step-twin',
                    'header': 'shadow-step-header'}[form], 'outer-param')
        else:
            raise AssertionError(c)
        if nm['clean'] and self.iv == 'while' and self.form == 'rotated':
            # A rotated while loop ends in the compute phase's statements, which would read as
            # increments.
            self.labels.discard('rotated')
            self.form = 'trailing'
            self.L('trailing')
        if need_ns or n.random() < 0.3:
            self.ns = 'fz_' + self.id
            self.L('in-namespace')

    def names_read(self, t, x):
        """A read of tile t at column x (an expression in [0, t.ex)) by this thread, in rows it
        loaded."""
        return self.read(t, kind='given', x=x)

    def names_params(self, params):
        """Parameters the names classes add (after the others), with their host arguments."""
        nm = self.nm
        if nm.get('ix_outer') == 'param':
            params.append(('int %s' % nm['ix_name'], nm['ix_name']))
            self.extra_args[nm['ix_name']] = str(nm['ix_val'])
        if 'step_form' in nm:
            params.append(('int %s' % nm['step_name'], nm['step_name']))
            self.extra_args[nm['step_name']] = str(nm['step_param'])

    def names_outer(self, B):
        """Declarations of the kernel (before the loop) and of its namespace that the body hides."""
        nm = self.nm
        if 'ext_tile' in nm:
            name, v = nm['ext_name'], nm['ext_outer']
            if nm['ext_where'] == 'kernel':
                B.append('%s %s = %d;' % (nm['ext_outer_kw'], name, v))
                if not nm['ext_twin']:
                    B.append('(void)%s;' % name)
            elif nm['ext_where'] == 'enum':
                self.ns_decls.append('enum { %s = %d };' % (name, v))
            else:
                self.ns_decls.append('%s %s = %d;' % (nm['ext_outer_kw'], name, v))
        if nm.get('ix_outer') == 'local':
            name, v = nm['ix_name'], nm['ix_val']
            if nm['ix_local_form'] == 'lit':
                B.append('const int %s = %d;' % (name, v))
            elif nm['ix_local_form'] == 'block':
                B.append('const int %s = (int)(blockIdx.x %% 7) * %d + 1;' % (name, v))
            else:
                B.append('int %s = %d;' % (name, v))
            B.append('(void)%s;' % name)
        elif nm.get('ix_outer') == 'ns':
            self.ns_decls.append('constexpr int %s = %d;' % (nm['ix_name'], nm['ix_val']))

    def names_index(self, t, xs_list, zs, ys):
        """shadow-index and shadow-param-copy: the copy-phase declarations of tile t, and the index
        each of its statements reads (None where not this tile)."""
        nm = self.nm
        if nm.get('ix_tile') is not t:
            return None, None
        s = t.src
        name, var = nm['ix_name'], nm['ix_var']
        delta = (' + %d' % t.delta) if t.delta else ''
        off = (' + ' + self.offi_expr) if t.i == 0 and self.offi else ''
        if self.iv == 'gridstride':
            top = ['const int %s = tile * %s;' % (name, self.rs_name(s))]
            first = name
        else:
            top = ['const int %s = %s * %s;' % (name, self.tvar, self.step_expr(t))]
            first = '%s + %s' % (self.base_name(s), name)
        if nm['ix_per_elem']:
            x0 = xs_list[0][0]
            top.append('const int %s = %s%s%s + %s;' % (var, first, delta, off,
                                                        self.local_index(t, zs, ys, x0)))
            span = t.cspan
            offs = {'multi': [j * span for j in range(t.m)], 'halo': [0, span]}.get(t.xs, [0])
            gs = [var if o == 0 else '%s + %d' % (var, o) for o in offs]
        else:
            top.append('const int %s = %s%s%s;' % (var, first, delta, off))
            gs = None   # per element: var + the element's local index
        return top, gs

    def names_compute(self):
        """Statements at the end of the compute phase: reads of the index variables declared in the
        copy phase, and the locals that hide a parameter."""
        nm = self.nm
        n = self.nr
        out = []
        isint = self.T == 'int'

        def m(e):
            return '(%s & 63)' % e if isint else e

        if 'ix_tile' in nm:
            t = nm['ix_tile']
            cx = self.cx(t)
            var = nm['ix_var']
            x = ('%s %% %d' % (var, t.ex) if nm['ix_per_elem'] else
                 '(%s + %s) %% %d' % (var, cx, t.ex))
            out.append('acc += %s;' % m(self.names_read(t, x)))
            if nm['ix_read_base']:
                out.append('acc += %s;' % m(self.names_read(
                    t, '(%s + %s) %% %d' % (cx, nm['ix_name'], t.ex))))
        if nm.get('par_where') == 'compute':
            cands = [nme for _, nme in self.params if not nme.startswith('out')]
            name = n.choice(cands)
            vals = ['(int)(threadIdx.x % 5) + 1', '(int)(blockIdx.x % 3)', 'tid % 11']
            if self.has_t:
                vals.append('%s & 7' % self.tvar)
            t = n.choice(self.tiles)
            decl = 'const int %s = %s;' % (name, n.choice(vals))
            use = 'acc += %s;' % m(self.names_read(t, '(%s + %s) %% %d' % (self.cx(t), name, t.ex)))
            if n.random() < 0.35:
                out += ['{', '  ' + decl, '  ' + use, '}']
                self.L('shadow-param-block')
            else:
                out += [decl, use]
            nm['par_name'] = name
        if 'step_form' in nm:
            form, name = nm['step_form'], nm['step_name']
            decl = 'const int %s = %d;' % (name, nm['step_local'])
            t = n.choice(self.tiles)
            use = 'acc += %s;' % m(self.names_read(t, '(%s + %s) %% %d' % (self.cx(t), name, t.ex)))
            if form == 'twin':
                out += ['{', '  ' + decl, '  ' + use, '}']
            elif form == 'header' or nm['step_place'] == 'compute':
                out += [decl, use]
        return out

    def make_tile(self, i, budget, force_small=False, wide=False):
        r = self.r
        T = Tile()
        T.i = i
        T.name = r.choice(['s', 'tile', 'sh', 'buf', 'As', 'Bs']) + str(i)
        bx, by, bz = self.B
        T.linear = self.dims >= 2 and r.random() < 0.1
        T.dims = 1 if T.linear else self.dims
        if T.linear:
            self.L('linear-copy')
        cx_span = self.NT if T.linear else bx
        T.cspan = cx_span
        esz = self.ty['size']
        for _ in range(12):
            xs = pick(r, {'exact': 45, 'multi': 15, 'halo': 15, 'smaller': 10, 'loop': 15})
            if wide:
                xs = 'multi'
            if force_small:
                xs = 'exact'
            m = H = 0
            if xs == 'exact':
                ex = cx_span
            elif xs == 'multi':
                m = r.choice([2, 2, 3, 4])
                if wide:  # more than 24 KiB, at most budget
                    rows = (by if T.dims >= 2 else 1) * (bz if T.dims == 3 else 1)
                    m = max(m, (24 * 1024 // (cx_span * rows * esz)) + 1)
                ex = m * cx_span
            elif xs == 'halo':
                H = r.choice([1, 2, 3, cx_span // 4 or 1, cx_span // 2 or 1, cx_span])
                H = max(1, min(H, cx_span))
                ex = cx_span + H
            elif xs == 'smaller':
                ex = r.choice([cx_span // 2, cx_span - 1, cx_span // 4, 3])
                if ex < 1:
                    ex = 1
            else:
                ex = r.choice([cx_span + 5, 2 * cx_span, 2 * cx_span + 3, cx_span * 3 // 2 + 1,
                               cx_span - 3 if cx_span > 8 else cx_span + 1])
            ys, ey = 'exact', 1
            if T.dims >= 2:
                ys = pick(r, {'exact': 70, 'loop': 20, 'smaller': 10})
                if ys == 'exact':
                    ey = by
                elif ys == 'loop':
                    ey = r.choice([2 * by, by + 3, by * 3 // 2 + 1])
                else:
                    ey = max(1, by // 2)
            ez = bz if T.dims == 3 else 1
            nbytes = ex * ey * ez * esz
            if force_small or nbytes <= budget:
                break
        else:
            return None
        T.xs, T.m, T.H, T.ex, T.ys, T.ey, T.ez = xs, m, H, ex, ys, ey, ez
        T.bytes = ex * ey * ez * esz
        self.L('x-' + xs)
        if T.dims >= 2 and ys != 'exact':
            self.L('y-' + ys)
        # Row and plane pitches: at least a row (a plane); odd, multiples of 4, padded.
        T.ld = ex if T.dims >= 2 else 1
        if T.dims >= 2:
            T.ld = pick(r, {ex: 20, ex + 1: 10, ex + 3: 10, (ex + 3) // 4 * 4 + 4: 15,
                            ex * 2 + 1: 10, ex + 32: 10, (ex | 1) + 2: 10, 'wide': 15})
            T.ld_param = r.random() < 0.6
        else:
            T.ld_param = False
        T.pl = 0
        if T.dims == 3:
            T.pl = pick(r, {'tight': 50, 'pad': 50})
        # The walk: along rows (x), down the rows (y) or through planes (z).
        T.walk = 'x'
        if T.dims >= 2 and r.random() < 0.35:
            T.walk = 'y'
        if T.dims == 3 and r.random() < 0.3:
            T.walk = 'z'
        if T.xs == 'halo' and T.walk == 'x' and r.random() < 0.6:
            T.gap = -T.H            # overlapping tiles, a stencil
            self.L('overlap')
        else:
            T.gap = pick(r, {0: 80, 1: 10, 4: 10})
        self.L('walk-' + T.walk)
        return T

    # ---------------------------------------------------------------- sizes
    def finish_geometry(self):
        """Fixes pitches (which for 'wide' rows depend on the tile count) once per kernel."""
        r = self.r
        for t in self.tiles:
            if t.ld == 'wide':
                t.ld = t.ex * r.choice([8, 16, 33]) + r.choice([0, 1, 4])
                if t.src.alias:   # every block owns its region: keep it small
                    t.ld = t.ex + 1
            if t.dims == 3:
                base = (t.ey - 1) * t.ld + t.ex
                t.pl = base if t.pl == 'tight' else base + r.choice([1, 4, 7, 32])
            if t.walk == 'x':
                t.step = t.ex + t.gap
            elif t.walk == 'y':
                t.step = (t.ey + max(t.gap, 0)) * t.ld
            else:
                t.step = t.ez * t.pl
            t.step = max(t.step, 1)

    def span(self, t, ntl):
        """1 + the largest index a block reads of tile t over ntl tiles (its own region)."""
        extra = 1 if t.src.alias == 'next' else 0
        local = (t.ez - 1) * t.pl + (t.ey - 1) * t.ld + (t.ex - 1) + t.delta + self.offmax()
        return local + max(ntl - 1 + extra, 0) * t.step + 1

    def offmax(self):
        return getattr(self, 'offval', 0)

    # ---------------------------------------------------------------- text helpers
    def sz(self, v, what):
        """A tile extent: a literal, the kernel's macro or its template parameter."""
        if what in self.size_macros:
            return self.size_macros[what]
        return str(v)

    def bar(self):
        b = self.barrier
        if b == 'sync':
            return '__syncthreads();'
        if b == 'block':
            return 'block.sync();'
        if b == 'cgsync':
            return 'cg::sync(block);'
        if b == 'ttb':
            return 'cg::this_thread_block().sync();'
        return self.P + 'SYNC();'

    def cx(self, t):
        return 'tid' if t.linear else 'tx'

    def tile_ref(self, t, z, y, x):
        if t.dims == 1:
            return '%s[%s]' % (t.name, x)
        if t.dims == 2:
            return '%s[%s][%s]' % (t.name, y, x)
        return '%s[%s][%s][%s]' % (t.name, z, y, x)

    def local_index(self, t, z, y, x):
        """The element (z, y, x) of the tile relative to the tile's first element."""
        parts = []
        if t.dims == 3:
            parts.append('%s * %s' % (z, self.pitch(t, 'pl')))
        if t.dims >= 2:
            if 'index' in self.macros:
                parts.append('%sIDX%d(%s, %s)' % (self.P, t.i, y, x))
                return ' + '.join(parts)
            if self.helper_index:
                parts.append('fz_mul(%s, %s)' % (y, self.pitch(t, 'ld')))
            else:
                parts.append('%s * %s' % (y, self.pitch(t, 'ld')))
        parts.append(x)
        return ' + '.join(parts)

    def pitch(self, t, which):
        if which == 'ld':
            return 'ld%d' % t.i if t.ld_param else str(t.ld)
        return str(t.pl)

    def step_expr(self, t):
        if t.walk == 'y' and t.ld_param:
            return '%d * ld%d' % (t.ey + max(t.gap, 0), t.i)
        if t.walk == 'x' and t.gap == 0 and ('ex', t.i) in self.size_macros:
            return self.size_macros[('ex', t.i)]
        if t.walk == 'x' and t.gap == 0 and t.bdim_step:
            return 'blockDim.x'
        return str(t.step)

    def gaddr(self, t, local, next_tile=False):
        """The global index of tile-local element `local` of tile t in this iteration."""
        s = t.src
        delta = (' + %d' % t.delta) if t.delta else ''
        off = ''
        if t.i == 0 and self.offi:
            off = ' + ' + self.offi_expr
        nxt = (' + %s' % self.step_expr(t)) if next_tile else ''
        iv = self.iv
        if t.i == 0 and self.offv:
            return '%s + offv%s%s + %s%s' % (self.base_name(s), delta, off, local, nxt)
        if iv in ('counter', 'while', 'down'):
            return '%s + %s * %s%s%s + %s%s' % (self.base_name(s), self.tvar, self.step_expr(t),
                                                delta, off, local, nxt)
        if iv == 'twoiv':
            if t.i == 0:
                return 'o0%s%s + %s%s' % (delta, off, local, nxt)
            return '%s + t * %s%s%s + %s%s' % (self.base_name(s), self.step_expr(t), delta, off,
                                               local, nxt)
        if iv == 'multi':
            return 'o%d%s%s + %s%s' % (t.i, delta, off, local, nxt)
        if iv == 'gridstride':
            return 'tile * %s%s%s + %s' % (self.rs_name(s), delta, off, local)
        if iv in ('pointer', 'pointer-init'):
            # Relative to the source parameter: where the moving pointer points now.
            return '(int)(p%d - %s)%s%s + %s%s' % (t.i, s.name, delta, off, local, nxt)
        raise AssertionError(iv)

    def base_name(self, s):
        return 'base_' + s.name

    def rs_name(self, s):
        return 'rs_' + s.name

    # ---------------------------------------------------------------- emission
    def emit(self):
        self.choose()
        if self.names:
            self.apply_names()
        self.finish_geometry()
        self.plan_cases()
        self.decide_dyn()
        P = self.P
        T = self.T
        out = []
        out.append('// ==== BEGIN KERNEL %s @LABELS@' % self.id)
        # Macros (and the template parameter that sizes the first tile).
        self.size_macros = {}
        if 'size' in self.macros:
            for t in self.tiles:
                nm = '%sTS%d' % (P, t.i)
                out.append('#define %s %d' % (nm, t.ex))
                self.size_macros[('ex', t.i)] = nm
        if self.template:
            self.size_macros[('ex', 0)] = 'EX0'
        if self.barrier == 'macro':
            out.append('#define %sSYNC() __syncthreads()' % P)
        if 'copy' in self.macros:
            out.append('#define %sCOPY(dst, src, i) dst = src[i]' % P)
        if 'loop' in self.macros:
            out.append('#define %sFOR(t, n) for (int t = 0; t < (n); ++t)' % P)
        if 'index' in self.macros:
            for t in self.tiles:
                if t.dims >= 2:
                    out.append('#define %sIDX%d(y, x) ((y) * (%s) + (x))' % (P, t.i, self.pitch(t, 'ld')))
        if self.bound == 'macro':
            out.append('#define %sTILES(n) (n)' % P)
        # Device-side helpers of this kernel.
        if self.store == 'devfn':
            out.append('__device__ void put_%s(%s* p, int i, %s v) { p[i] = v; }' % (self.id, T, T))
        if self.store == 'devglobal':
            out.append('__device__ %s* g_%s;' % (T, self.id))
        if self.peek:
            out.append('__device__ %s peek_%s(const %s* p, int i) { return p[i]; }' % (T, self.id, T))
        # Kernel text.
        body = self.kernel_body()
        if getattr(self, 'vector_reads', False):
            # A tile read as 16-byte vectors must start on 16 bytes in the original too: a
            # __shared__ array is aligned only to its element.
            names = set(t.name for t in self.tiles)
            body = [re.sub(r'^(\s*)__shared__ (\S+) (\w+)\[',
                           lambda m: '%salignas(16) __shared__ %s %s[' % m.groups() if m.group(3) in names
                           else m.group(0), l) for l in body]
            V, W = VECTOR_OF[T]
            lanes = 'c == 0 ? v.x : v.y' if W == 2 else 'c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w'
            out.append('__device__ %s lane_%s(%s v, int c) { return %s; }' % (T, self.id, V, lanes))
        if getattr(self, 'copy_helpers', False):
            out.append('__device__ void st_%s(%s* p, %s v) { *p = v; }' % (self.id, T, T))
            out.append('__device__ %s ld_%s(const %s* p) { return *p; }' % (T, self.id, T))
        out.extend(getattr(self, 'dyn_helpers', []))
        params = ', '.join(d for d, _ in self.params)
        if self.ns:
            out.append('namespace %s {' % self.ns)
            out.extend(self.ns_decls)
        if self.devfn_loop:
            out.append('__device__ void body_%s(%s) {' % (self.id, params))
            out.extend('  ' + l if l else '' for l in body)
            out.append('}')
            out.append('%s %s(%s) {' % (self.kernel_head(), self.fn, params))
            out.append('  body_%s(%s);' % (self.id, ', '.join(n for _, n in self.params)))
            out.append('}')
        else:
            if self.template:
                out.append('template <int EX0>')
            out.append('%s %s(%s) {' % (self.kernel_head(), self.fn, params))
            out.extend('  ' + l if l else '' for l in body)
            out.append('}')
        if self.ns:
            out.append('}  // namespace %s' % self.ns)
        out.extend(self.host_text())
        out.append('// ==== END KERNEL %s' % self.id)
        out[0] = out[0].replace('@LABELS@', ','.join(sorted(self.labels)))
        return '\n'.join(out) + '\n'

    def decide_dyn(self):
        """Tiles in dynamic shared memory (`dyn-tiles`): every tile of one dimension becomes a pointer
        into one `extern __shared__` array, at offsets 16 bytes apart, and each launch asks for their
        bytes. The pointer is set from the array (`reinterpret_cast<T *>(dyn + OFF)`, `(T *)&dyn[OFF]`)
        or from a device function that returns it (`dyn-helper`, as the CUDA samples' SharedMemory<T>).
        From a generator of its own, so that a kernel without it is what it was before it existed.
        """
        d = random.Random('tilepipe-fuzz-dyn:%d:%d' % (self.seed, self.idx))
        self.dyn = None
        if d.random() >= 0.2:
            return
        if not all(t.dims == 1 for t in self.tiles) or self.tile_in_body or self.names:
            return
        offs, at = [], 0
        for t in self.tiles:
            offs.append(at)
            at += (t.bytes + 15) // 16 * 16
        if at > 48 * 1024:
            return
        self.dyn = dict(offsets=offs, bytes=at, forms=[pick(d, {'cast': 45, 'cstyle': 30, 'helper': 25})
                                                       for _ in self.tiles])
        self.L('dyn-tiles')
        for f in self.dyn['forms']:
            self.L('dyn-' + f)

    def dyn_decls(self, T):
        """The tiles' declarations as pointers into dynamic shared memory (decide_dyn), and the helpers
        of those set through a function, which go before the kernel."""
        arr = 'dyn_%s' % self.id
        decls = ['extern __shared__ __align__(16) unsigned char %s[];' % arr]
        helpers = []
        for t, off, form in zip(self.tiles, self.dyn['offsets'], self.dyn['forms']):
            if form == 'cast':
                decls.append('%s* %s = reinterpret_cast<%s*>(%s + %d);' % (T, t.name, T, arr, off))
            elif form == 'cstyle':
                decls.append('%s* %s = (%s*)&%s[%d];' % (T, t.name, T, arr, off))
            else:
                fn = 'dynview_%s_%d' % (self.id, t.i)
                helpers.append('__device__ %s* %s() { extern __shared__ __align__(16) unsigned char %s[]; '
                               'return reinterpret_cast<%s*>(%s + %d); }' % (T, fn, arr, T, arr, off))
                decls.append('%s* %s = %s();' % (T, t.name, fn))
        return decls, helpers

    def kernel_body(self):
        r = self.r
        T, ty = self.T, self.ty
        bx, by, bz = self.B
        B = []
        params = []
        c_out = '%s* %sout' % (T, '__restrict__ ' if self.restrict else '')
        params.append((c_out, 'out'))
        if self.store and self.store_target == 'out':
            params.append(('%s* %sout2' % (T, '__restrict__ ' if self.restrict else ''), 'out2'))
        if self.red:
            params.append(('%s* outr' % T, 'outr'))
        if self.shfl:
            params.append(('%s* outw' % T, 'outw'))
        for s in self.srcs:
            const = '' if s.alias else 'const '
            rq = '__restrict__ ' if self.restrict else ''
            params.append(('%s%s* %s%s' % (const, T, rq, s.name), s.name))
            if s.hidden == 'param':
                params.append(('%s* %s_w' % (T, s.name), s.name + '_w'))
        for t in self.tiles:
            if t.ld_param:
                params.append(('int ld%d' % t.i, 'ld%d' % t.i))
        for s in self.srcs:
            if self.iv == 'gridstride':
                params.append(('int %s' % self.rs_name(s), self.rs_name(s)))
            elif s.base_form in ('mod', 'lin'):
                if s.base_form == 'mod':
                    params.append(('int nr_%s' % s.name, 'nr_' + s.name))
                params.append(('int %s' % self.rs_name(s), self.rs_name(s)))
            if s.guard_n:
                params.append(('int %s' % s.guard_n, s.guard_n))
        if self.bound == 'mem-param':
            params.append(('const int* ntp', 'ntp'))
        else:
            params.append(('int numTiles', 'numTiles'))
        if self.offi == 'param':
            params.append(('int off', 'off'))
        if self.exit_rows:
            params.append(('int rows_out', 'rows_out'))
        stencil_w = any(t.xs == 'halo' for t in self.tiles) and T != 'int' and r.random() < 0.5
        if stencil_w:
            params.append(('const %s* w' % T, 'w'))
        self.stencil_w = stencil_w
        if self.names:
            self.names_params(params)
        self.params = params

        # Thread coordinates.
        B.append('const int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;')
        B.append('const int tid = (tz * %d + ty) * %d + tx;' % (by, bx))
        if self.barrier in ('block', 'cgsync'):
            B.append('cg::thread_block block = cg::this_thread_block();')
        if self.names:
            self.names_outer(B)
        # Tile declarations.
        decls = []
        for t in self.tiles:
            ex = self.sz(t.ex, ('ex', t.i))
            if self.nm.get('ext_tile') is t:
                # shadow-extent: the extent names a constant; the body's own hides the outer one.
                ex = self.nm['ext_name']
                if not self.nm['ext_twin']:
                    decls.append('%s %s = %d;' % (self.nm['ext_local'], ex, t.ex))
            if t.dims == 1:
                decls.append('__shared__ %s %s[%s];' % (T, t.name, ex))
            elif t.dims == 2:
                decls.append('__shared__ %s %s[%d][%s];' % (T, t.name, t.ey, ex))
            else:
                decls.append('__shared__ %s %s[%d][%d][%s];' % (T, t.name, t.ez, t.ey, ex))
        if self.dyn:
            decls, self.dyn_helpers = self.dyn_decls(T)
        if not self.tile_in_body:
            B.extend(decls)
        if self.red:
            B.append('__shared__ %s red[%d];' % (T, self.NT))
        # Early exit.
        if self.exit_rows:
            B.append('if (threadIdx.y < rows_out) return;')
        if self.red:
            B.append('red[tid] = %s;' % ty['zero'])
            B.append(self.bar())
        # Block bases.
        for s in self.srcs:
            if self.iv == 'gridstride':
                continue
            if s.base_form == 'mod':
                B.append('const int %s = (blockIdx.x %% nr_%s) * %s;' % (self.base_name(s), s.name,
                                                                         self.rs_name(s)))
            elif s.base_form == 'lin':
                B.append('const int %s = blockIdx.x * %s;' % (self.base_name(s), self.rs_name(s)))
            else:
                B.append('const int %s = (blockIdx.x %% %d) * %d;' % (self.base_name(s), s.lit_nr,
                                                                      s.lit_rs))
        # Invariant offset.
        self.offi_expr = None
        if self.offi:
            o = self.offi
            if o == 'param':
                self.offi_expr = 'off'
            elif o == 'local':
                B.append('const int lo = %d;' % self.offval)
                self.offi_expr = 'lo'
            elif o == 'ref':
                B.append('int lo = %d;' % self.offval)
                B.append('int& lor = lo;')
                self.offi_expr = 'lor'
            elif o == 'ptr':
                B.append('int lo = %d;' % self.offval)
                B.append('const int* pc = &lo;')
                self.offi_expr = '*pc'
            elif o == 'constexpr':
                B.append('int lo = %d;' % self.offval)
                self.offi_expr = 'fz_deref(&lo)'
            elif o == 'array':
                B.append('int offs[3] = {%d, %d, %d};' % (self.offval, self.offval + 1, 0))
                B.append('int ko = 0;')
                self.offi_expr = 'offs[ko]'
            elif o == 'minmax':
                B.append('const int lo = %d;' % self.offval)
                self.offi_expr = r.choice(['min(lo, %d)' % self.offval, 'max(lo, 0)'])
        acc_t = T
        B.append('%s acc = %s;' % (acc_t, ty['zero']))
        # Store setup.
        self.setup_store(B)
        # Loop bound.
        bound = self.bound_expr(B)
        if self.nested:
            B.append('for (int rep = 0; rep < 2; ++rep) {')
            inner = []
        else:
            inner = B
        self.loop(inner, bound, decls)
        if self.nested:
            B.extend('  ' + l for l in inner)
            B.append('}')
        # After the loop.
        if self.red:
            if self.form == 'rotated' or self.r.random() < 0.5:
                B.append(self.bar())
            first = self.exit_rows * bx
            B.append('if (tid == %d) {' % first)
            B.append('  %s sum = %s;' % (T, ty['zero']))
            if self.exit_rows and bz > 1:
                # Only the slots of the threads that stayed (rows >= rows_out of every plane).
                B.append('  for (int i = 0; i < %d; ++i)' % self.NT)
                B.append('    if ((i / %d) %% %d >= %d) sum += red[i];' % (bx, by, self.exit_rows))
            else:
                B.append('  for (int i = %d; i < %d; ++i) sum += red[i];' % (first, self.NT))
            B.append('  outr[blockIdx.x] = sum;')
            B.append('}')
        if self.shfl:
            # A warp reduction after the loop (whole warps only ever leave early).
            B.append('for (int o = 16; o > 0; o >>= 1)')
            B.append('  acc += __shfl_down_sync(0xffffffffu, acc, o);')
            B.append('if ((tid & 31) == 0) outw[blockIdx.x * %d + (tid >> 5)] = acc;' % (self.NT // 32))
        B.append('out[blockIdx.x * %d + tid] = acc;' % self.NT)
        return B

    def setup_store(self, B):
        self.store_ptr = None
        if not self.store:
            return
        T = self.T
        tgt = self.store_target
        if tgt == 'out':
            name = 'out2'
        else:
            name = tgt.name + '_w' if tgt.hidden == 'param' else tgt.name
        st = self.store
        if st == 'devglobal':
            self.store_ptr = 'g_' + self.id
        elif st == 'ptrcopy':
            B.append('%s* wp;' % T)
            B.append('wp = %s;' % name)
            self.store_ptr = 'wp'
        else:
            self.store_ptr = name
        if st == 'lambda':
            B.append('auto put = [&](int i, %s v) { %s[i] = v; };' % (T, self.store_ptr))

    def store_stmt(self, idx, val):
        st = self.store
        if st == 'lambda':
            return ['put(%s, %s);' % (idx, val)]
        if st == 'devfn':
            return ['put_%s(%s, %s, %s);' % (self.id, self.store_ptr, idx, val)]
        if st == 'ref':
            return ['%s& rr = %s[%s];' % (self.T, self.store_ptr, idx), 'rr = %s;' % val]
        return ['%s[%s] = %s;' % (self.store_ptr, idx, val)]

    def bound_expr(self, B):
        b = self.bound
        n = 'numTiles'
        if b == 'param':
            return n
        if b == 'local':
            B.append('const int lim = numTiles;')
            return 'lim'
        if b == 'ref':
            B.append('int lim = numTiles;')
            B.append('int& lr = lim;')
            return 'lr'
        if b == 'mem-param':
            return '*ntp'
        if b == 'mem-array':
            B.append('int lims[2] = {numTiles, 0};')
            B.append('int kl = 0;')
            return 'lims[kl]'
        if b == 'devfn':
            return 'fz_lim(numTiles)'
        if b == 'constexpr':
            B.append('int lim = numTiles;')
            return 'fz_deref(&lim)'
        if b == 'macro':
            return '%sTILES(numTiles)' % self.P
        raise AssertionError(b)

    def loop(self, B, bound, decls):
        r = self.r
        T = self.T
        iv = self.iv
        self.tvar = 't'
        self.has_t = True
        tail = []
        if self.offv:
            B.append('int offv = 0;')
            if self.offv == 'ptr':
                B.append('int* po = &offv;')
            elif self.offv == 'lambda':
                B.append('auto bump = [&] { offv += %s; };' % self.step_expr(self.tiles[0]))
        if iv == 'counter':
            if 'loop' in self.macros:
                head = '%sFOR(t, %s) {' % (self.P, bound)
            elif self.inc == 'lambda':
                B.append('int t = 0;')
                B.append('auto next = [&] { ++t; };')
                head = 'for (; t < %s; next()) {' % bound
            elif self.inc == 'devfn':
                head = 'for (int t = 0; t < %s; fz_adv(t, 1)) {' % bound
            else:
                head = 'for (int t = 0; t < %s; %s) {' % (bound, r.choice(['++t', 't++', 't += 1', 't = t + 1']))
            if self.nm.get('step_form') == 'header':
                # shadow-step-header: the header reads the parameter; the body's constant hides it.
                head = 'for (int t = 0; t < %s; t += %s) {' % (bound, self.nm['step_name'])
        elif iv == 'down':
            head = 'for (int t = %s - 1; t >= 0; --t) {' % bound
        elif iv == 'while':
            B.append('int t = 0;')
            head = 'while (t < %s) {' % bound
            if self.inc == 'lambda':
                B.append('auto next = [&] { ++t; };')
                tail.append('next();')
            elif self.inc == 'devfn':
                tail.append('fz_adv(t, 1);')
            else:
                tail.append(r.choice(['++t;', 't += 1;', 't++;']))
            if self.nm.get('step_form') in ('tail', 'twin'):
                # shadow-step: `t += step` reads the body's constant (tail) or the parameter (twin).
                tail[-1:] = ['t += %s;' % self.nm['step_name']]
        elif iv == 'twoiv':
            t0 = self.tiles[0]
            head = 'for (int t = 0, o0 = %s; t < %s; ++t, o0 += %s) {' % (
                self.base_name(t0.src), bound, self.step_expr(t0))
        elif iv == 'multi':
            self.has_t = False
            inits = []
            incs = []
            for t in self.tiles:
                inits.append('o%d = %s' % (t.i, self.base_name(t.src)))
                incs.append('o%d += %s' % (t.i, self.step_expr(t)))
            t0 = self.tiles[0]
            B.append('const int end0 = %s + %s * %s;' % (self.base_name(t0.src), bound,
                                                         self.step_expr(t0)))
            head = 'for (int %s; o0 < end0; %s) {' % (', '.join(inits), ', '.join(incs))
            B.append('int cnt = 0;')
        elif iv == 'pointer':
            for t in self.tiles:
                const = '' if t.src.alias else 'const '
                B.append('%s%s* p%d = %s + %s;' % (const, T, t.i, t.src.name,
                                                   self.base_name(t.src)))
            incs = ', '.join('p%d += %s' % (t.i, self.step_expr(t)) for t in self.tiles)
            head = 'for (int t = 0; t < %s; ++t, %s) {' % (bound, incs)
        elif iv == 'pointer-init':
            self.has_t = False
            t0 = self.tiles[0]
            B.append('const %s* const end0 = %s + %s + %s * %s;' % (
                T, t0.src.name, self.base_name(t0.src), bound, self.step_expr(t0)))
            inits = ', '.join('%sp%d = %s + %s' % ('' if t.i == 0 else '*', t.i, t.src.name,
                                                    self.base_name(t.src)) for t in self.tiles)
            incs = ', '.join('p%d += %s' % (t.i, self.step_expr(t)) for t in self.tiles)
            head = 'for (const %s *%s; p0 != end0; %s) {' % (T, inits, incs)
            B.append('int cnt = 0;')
        elif iv == 'gridstride':
            self.tvar = 'tile'
            head = 'for (int tile = blockIdx.x; tile < numTiles; tile += gridDim.x) {'
        if 'backslash' in self.comments and r.random() < 0.5:
            B.append('// the tiled loop below walks the tiles one by one \\')
            B.append('   (this line continues the comment above: __syncthreads(); t = 0;)')
        if any(s.hidden and s.annotate for s in self.srcs):
            B.append('// tilepipe: assume-noalias=false')
        if self.stages:
            B.append('// tilepipe: stages=%d' % self.stages)
        head_at = len(B)
        B.append(head)
        body = []
        if self.form == 'rotated':
            body.append(self.bar())
        if self.tile_in_body:
            body.extend(decls)
        if self.nm.get('step_form') == 'tail' and self.nm['step_place'] == 'copy':
            body.append('const int %s = %d;' % (self.nm['step_name'], self.nm['step_local']))
        body.extend(self.copy_phase())
        if 'block' in self.comments:
            body.append('/* copy phase done; the compute phase reads the tiles:')
            body.append('   acc += s[0]; __syncthreads(); */')
        body.append(self.bar() if 'inline' not in self.comments else
                    self.bar()[:-1] + ' /* publish the tiles */;')
        body.extend(self.compute_phase())
        if self.form == 'trailing':
            body.append(self.bar())
        if 'backslash' in self.comments and r.random() < 0.7:
            pos = r.randrange(1, len(body))
            body[pos:pos] = ['// next statement \\', '   continued comment line']
        body.extend(tail)
        B.extend('  ' + l for l in body)
        B.append('}')
        B[head_at:head_at] = self.counter_decls

    # ---------------------------------------------------------------- copy phase
    def copy_phase(self):
        out = []
        for t in self.tiles:
            out.extend(self.copy_tile(t))
        return out

    def copy_tile(self, t):
        """Statements that copy tile t (each thread its elements)."""
        r = self.r
        cx = self.cx(t)
        span = t.cspan
        xs_list = []   # (x expression, condition or None)
        loop_x = None
        if t.xs == 'exact':
            xs_list = [(cx, None)]
        elif t.xs == 'multi':
            xs_list = [(cx if j == 0 else '%s + %d' % (cx, j * span), None) for j in range(t.m)]
        elif t.xs == 'halo':
            xs_list = [(cx, None), ('%d + %s' % (span, cx), '%s < %d' % (cx, t.H))]
        elif t.xs == 'smaller':
            xs_list = [(cx, '%s < %d' % (cx, t.ex))]
        else:
            loop_x = 'i'
            # A counter of the kernel's instead (lavaMD's `while (wtx < N) { ...; wtx += T; }
            # wtx = tx;`), reset after the loop; its form: while, for with no init, for whose init
            # sets it.
            counter = None
            if t.dims == 1 and not self.names and not self.nm and self.cr.random() < 0.3:
                loop_x = 'w%d' % t.i
                counter = self.cr.choice(['while', 'for', 'for-init'])
                self.L('counter-loop', 'counter-' + counter)
            xs_list = [(loop_x, None)]
        by = self.B[1]
        ys = 'ty'
        loop_y = None
        ycond = None
        if t.dims >= 2:
            if t.ys == 'loop':
                loop_y = 'r'
                ys = 'r'
            elif t.ys == 'smaller':
                ycond = 'ty < %d' % t.ey
        zs = 'tz'
        in_loop = bool(loop_x or loop_y)
        # Index variables: before the statements (and their conditions) at the top of the copy
        # phase, or, rarely, right beside the store inside a condition or an inner copy loop.
        use_var = r.random() < 0.25 or (t.guard in ('ternary', 'ifelse') and r.random() < 0.5)
        beside = use_var and (in_loop or r.random() < 0.15)
        if self.nm.get('clean'):
            # Index declarations only at the top of the copy phase (names classes).
            beside = False
            use_var = use_var and not ycond
        if in_loop and not beside:
            use_var = False
        top, lines = [], []
        ix_top, ix_gs = self.names_index(t, xs_list, zs, ys) if self.names else (None, None)
        if ix_top:
            use_var = beside = False
        for k, (x, cond) in enumerate(xs_list):
            local = self.local_index(t, zs, ys, x)
            dst = self.tile_ref(t, zs, ys, x)
            g_names = None
            if ix_top:
                g_names = ix_gs[k] if ix_gs else '%s + %s' % (self.nm['ix_var'], local)
            pre, body = self.copy_stmt(t, dst, local, k, use_var, g_names)
            if beside or ycond:
                body = pre + body
            else:
                top.extend(pre)
            if cond:
                if len(body) == 1:
                    body = ['if (%s) %s' % (cond, body[0])]
                else:
                    body = ['if (%s) {' % cond] + ['  ' + l for l in body] + ['}']
            lines.extend(body)
        if beside and use_var and not in_loop and not any(c for _, c in xs_list):
            self.L('index-var')
        elif beside:
            self.L('index-var-nested')
        elif use_var:
            self.L('index-var')
        if ix_top:
            top = ix_top + top
        if loop_x:
            inc = span
            if not t.linear and r.random() < 0.3:
                inc = 'blockDim.x'
                self.L('blockdim')
            if loop_x == 'i':
                hdr = 'for (int i = %s; i < %d; i += %s)' % (cx, t.ex, inc)
                lines = self.wrap(hdr, lines)
            else:
                w = loop_x
                self.counter_decls.append('int %s = %s;' % (w, '0' if counter == 'for-init' else cx))
                if counter == 'while':
                    lines = ['while (%s < %d) {' % (w, t.ex)] + ['  ' + l for l in lines] + \
                            ['  %s += %s;' % (w, inc), '}']
                elif counter == 'for':
                    lines = self.wrap('for (; %s < %d; %s += %s)' % (w, t.ex, w, inc), lines)
                else:
                    lines = self.wrap('for (%s = %s; %s < %d; %s += %s)' % (w, cx, w, t.ex, w, inc), lines)
                lines.append('%s = %s;' % (w, cx))
        if loop_y:
            hdr = 'for (int r = ty; r < %d; r += %d)' % (t.ey, by)
            lines = self.wrap(hdr, lines)
        if ycond:
            lines = self.wrap('if (%s)' % ycond, lines)
        # The same copies on both sides of an if whose guard is the same all iteration (of the
        # block's place, or of the thread's: `fixed-sides`): one iteration runs one side. Drawn
        # from a generator of its own, so that a seed gives the kernel it gave before the form
        # existed, or that kernel with its copies so doubled. Not around a counter loop, whose
        # reset must follow it in the copy phase.
        fr = random.Random('tilepipe-fuzz-sides:%d:%d:%d' % (self.seed, self.idx, t.i))
        if (not (loop_x or '').startswith('w') and not self.names and not self.nm and
                'copy' not in self.macros and fr.random() < 0.15):
            cond = fr.choice(['blockIdx.x % 2 == 0', 'gridDim.x > 3', '(threadIdx.x & 1) != 0',
                              'blockIdx.x == gridDim.x - 1'])
            lines = (['if (%s) {' % cond] + ['  ' + l for l in lines] + ['} else {'] +
                     ['  ' + l for l in lines] + ['}'])
            self.L('fixed-sides')
        return top + lines

    def wrap(self, hdr, lines):
        if len(lines) == 1 and self.r.random() < 0.5:
            return [hdr, '  ' + lines[0]]
        return [hdr + ' {'] + ['  ' + l for l in lines] + ['}']

    def copy_stmt(self, t, dst, local, k, use_var, g_names=None):
        """One tile store: (index declarations, statements); g_names: the index (names classes)."""
        r = self.r
        src = t.src.name
        g = self.gaddr(t, local) if g_names is None else g_names
        if self.iv in ('pointer', 'pointer-init'):
            g = '%s%s' % (local, (' + %d' % t.delta) if t.delta else '')
            if t.i == 0 and self.offi:
                g += ' + ' + self.offi_expr
            src = 'p%d' % t.i
        pre = []
        if use_var:
            v = 'g%d_%d' % (t.i, k)
            if r.random() < 0.2:
                pre.append('const unsigned %s = %s;' % (v, g))
                self.L('unsigned-index')
            else:
                pre.append('const int %s = %s;' % (v, g))
            g = v
        n = t.src.guard_n
        if t.guard == 'clamp':
            # Clamped index: every read stays below the bound.
            g = 'min(%s, %s - 1)' % (g, n)
            self.L('minmax')
        read = '%s[%s]' % (src, g)
        gi = g if use_var else '(%s)' % g
        if self.iv in ('pointer', 'pointer-init'):
            # The bound is on the index into the source, not into the moving pointer.
            gi = '(%s - %s) + %s' % (src, t.src.name, gi)
        if 'copy' in self.macros and not t.guard:
            body = ['%sCOPY(%s, %s, %s);' % (self.P, dst, src, g)]
        elif t.guard == 'ternary':
            body = ['%s = %s < %s ? %s : %s;' % (dst, gi, n, read, t.fill)]
        elif t.guard == 'ifelse':
            if r.random() < 0.5:
                body = ['if (%s < %s)' % (gi, n), '  %s = %s;' % (dst, read), 'else',
                        '  %s = %s;' % (dst, t.fill)]
            else:
                body = ['if (%s < %s) {' % (gi, n), '  %s = %s;' % (dst, read), '} else {',
                        '  %s = %s;' % (dst, t.fill), '}']
        else:
            body = ['%s = %s;' % (dst, read)]
            # Through helpers (`st(&s[..], ld(A + i));`, each a function of one statement): the
            # store and read they make. Drawn from a generator of its own, as below.
            hr = random.Random('tilepipe-fuzz-helper:%d:%d:%d:%d' % (self.seed, self.idx, t.i, k))
            if 'copy' not in self.macros and not self.names and not self.ns and hr.random() < 0.15:
                self.copy_helpers = True
                self.L('copy-helper')
                return pre, ['st_%s(&%s, ld_%s(%s + (%s)));' % (self.id, dst, self.id, src, g)]
            # A local read first, then stored (`const float v = A[i]; s[..] = v;`): a copy of the
            # read. Drawn from a generator of its own, so that a seed gives the kernel it gave
            # before the form existed, or that kernel with its reads through locals.
            lr = random.Random('tilepipe-fuzz-local:%d:%d:%d:%d' % (self.seed, self.idx, t.i, k))
            if 'copy' not in self.macros and not self.names and lr.random() < 0.3:
                v = 'v%d_%d' % (t.i, k)
                body = ['const %s %s = %s;' % (t.src.T, v, read), '%s = %s;' % (dst, v)]
                self.L('value-local')
        return pre, body

    # ---------------------------------------------------------------- compute phase
    def read(self, t, kvar=None, kind=None, x=None):
        """A read of tile t by this thread in the compute phase (always within the tile); x: the
        column, an expression in [0, t.ex) (kind 'given')."""
        r = self.r
        cx = self.cx(t)
        full_x = t.xs in ('exact', 'multi', 'halo', 'loop') and t.ex >= t.cspan
        kind = kind or r.choice(['own', 'shift', 'rev', 'mul', 't'] + (['k', 'k'] if kvar else []))
        if kind == 'own' and not full_x:
            kind = 'shift'
        if kind == 't' and not self.has_t:
            kind = 'shift'
        ex = t.ex
        if kind == 'given':
            pass
        elif kind == 'own':
            x = cx
        elif kind == 'shift':
            x = '(%s + %d) %% %d' % (cx, r.randrange(1, ex + 1), ex)
        elif kind == 'rev':
            x = '%d - %s %% %d' % (ex - 1, cx, ex)
        elif kind == 'mul':
            x = '(%s * %d + %d) %% %d' % (cx, r.choice([3, 5, 7]), r.randrange(ex), ex)
        elif kind == 't':
            x = '(%s + %s) %% %d' % (cx, self.tvar, ex)
        else:
            x = '(%s + %s) %% %d' % (kvar, cx, ex)
        y = z = None
        if t.dims >= 2:
            ey = t.ey
            k0 = self.exit_rows
            if k0:
                y = '%d + (ty - %d + %d) %% %d' % (k0, k0, r.randrange(ey - k0), ey - k0)
            elif kind in ('own',) and t.ys in ('exact', 'loop'):
                y = 'ty'
            elif kvar and r.random() < 0.5:
                y = '(%s + ty) %% %d' % (kvar, ey)
            else:
                y = '(ty + %d) %% %d' % (r.randrange(ey), ey)
        if t.dims == 3:
            z = 'tz' if r.random() < 0.6 else '(tz + 1) %% %d' % t.ez
        # The element read as a lane of the 16-byte vector that holds it (`vector-read`):
        # `lane(*reinterpret_cast<const float4 *>(&t[y][4 * (x / 4)]), x % 4)`, where rows are
        # whole vectors. Drawn from a generator of its own, so that a seed gives the kernel it gave
        # before the form existed, or that kernel with some reads so.
        self.vreads = getattr(self, 'vreads', 0) + 1
        vr = random.Random('tilepipe-fuzz-vread:%d:%d:%d' % (self.seed, self.idx, self.vreads))
        if self.T in VECTOR_OF and not self.names and t.ex % VECTOR_OF[self.T][1] == 0 and vr.random() < 0.1:
            V, W = VECTOR_OF[self.T]
            self.vector_reads = True
            self.L('vector-read')
            base = self.tile_ref(t, z, y, '%d * ((%s) / %d)' % (W, x, W))
            return 'lane_%s(*reinterpret_cast<const %s *>(&%s), (%s) %% %d)' % (self.id, V, base, x, W)
        return self.tile_ref(t, z, y, x)

    def compute_phase(self):
        r = self.r
        T, ty = self.T, self.ty
        isint = T == 'int'
        out = []
        tiles = self.tiles

        def rd(**kw):
            return self.read(r.choice(tiles), **kw)

        def m(e):
            return '(%s & 63)' % e if isint else e

        nstmt = r.choice([1, 2, 2, 3])
        for _ in range(nstmt):
            form = pick(r, {'kloop': 30, 'mix': 25, 'plain': 20, 'temp': 15, 'branch': 10,
                            'stencil': 25 if any(t.xs == 'halo' for t in tiles) else 0})
            if form == 'kloop':
                kl = r.choice([8, 16, max(t.ex for t in tiles)])
                kl = min(kl, 256)
                out.append('for (int k = 0; k < %d; ++k)' % kl)
                out.append('  acc += %s * %s;' % (m(rd(kvar='k')), m(rd(kvar='k'))))
                self.L('compute-kloop')
            elif form == 'mix':
                if isint:
                    out.append('acc = (acc ^ %s) + %s;' % (rd(), m(rd())))
                else:
                    out.append('acc = acc * %s + %s * %s;' % (ty['half'], rd(), rd()))
            elif form == 'plain':
                out.append('acc += %s;' % m(rd()))
            elif form == 'temp':
                out.append('const %s v%d = %s;' % (T, len(out), m(rd())))
                out.append('acc += v%d * %s;' % (len(out) - 1, m(rd())))
            elif form == 'branch':
                out.append('if ((tx + ty) % 2 == 0)')
                out.append('  acc += %s;' % m(rd()))
                out.append('else')
                out.append('  acc = acc - %s;' % m(rd()))
            elif form == 'stencil':
                t = r.choice([t for t in tiles if t.xs == 'halo'])
                cx = self.cx(t)
                y = 'ty' if t.dims >= 2 and t.ys != 'smaller' and not self.exit_rows else None
                if t.dims >= 2 and y is None:
                    k0 = self.exit_rows
                    y = '%d + (ty - %d) %% %d' % (k0, k0, t.ey - k0) if k0 else '(ty %% %d)' % t.ey
                z = 'tz' if t.dims == 3 else None
                ref = self.tile_ref(t, z, y, '%s + j' % cx)
                if self.stencil_w:
                    coef = 'w[j]'
                elif isint:
                    coef = '(j + 1)'
                else:
                    coef = None
                out.append('for (int j = 0; j <= %d; ++j)' % t.H)
                if coef:
                    out.append('  acc += %s * %s;' % (coef, m(ref)))
                else:
                    out.append('  acc += %s * %s;' % (ref, ty['half']))
                self.L('compute-stencil')
        if self.peek:
            t = r.choice([t for t in tiles if t.dims == 1])
            out.append('acc += %s;' % m('peek_%s(%s, (%s + %d) %% %d)' % (
                self.id, t.name, self.cx(t), r.randrange(t.ex), t.ex)))
        # Every tile is read (a copy nobody reads could be dropped by the compiler).
        text = '\n'.join(out)
        for t in tiles:
            if t.name + '[' not in text:
                out.append('acc += %s;' % m(self.read(t)))
        # Shared memory other than tiles, read after the loop.
        if self.red:
            out.append('red[tid] += %s;' % m(rd()))
        # Stores into global memory.
        if self.store:
            stmts = self.compute_store()
            if self.store_arch:
                stmts = ['#if ' + self.store_arch] + stmts + ['#endif']
            out.extend(stmts)
        if self.offv:
            t0 = self.tiles[0]
            if self.offv == 'ptr':
                tv = self.tvar
                out.append('*po = (%s + 1) * %s;' % (tv, self.step_expr(t0)))
            elif self.offv == 'lambda':
                out.append('bump();')
            elif self.offv == 'devfn':
                out.append('fz_adv(offv, %s);' % self.step_expr(t0))
            else:
                out.append('offv += %s;' % self.step_expr(t0))
        if not self.has_t:
            out.append('++cnt;')
        if self.names:
            out.extend(self.names_compute())
        return out

    def compute_store(self):
        r = self.r
        tgt = self.store_target
        if tgt == 'out':
            c = self.tvar if self.has_t else 'cnt'
            idx = '(blockIdx.x * 2 + (%s & 1)) * %d + tid' % (c, self.NT)
            if self.iv == 'gridstride':
                idx = '(blockIdx.x * 2 + ((tile / gridDim.x) & 1)) * %d + tid' % self.NT
            val = 'acc' if r.random() < 0.5 else self.store_value()
            return self.store_stmt(idx, val)
        # A write into the source: the element this thread copies of this tile (cur) or of the
        # next tile (next), inside this block's own region.
        cand = [t for t in tgt.tiles]
        t = r.choice(cand)
        cx = self.cx(t)
        x = cx
        y = 'ty' if t.dims >= 2 else None
        z = 'tz' if t.dims == 3 else None
        local = self.local_index(t, z, y, x)
        g = self.gaddr(t, local, next_tile=(tgt.alias == 'next'))
        if self.iv in ('pointer', 'pointer-init') and self.store == 'direct':
            # The pointer walks the source: write through it.
            g = local + ((' + %d' % t.delta) if t.delta else '')
            if t.i == 0 and self.offi:
                g += ' + ' + self.offi_expr
            if tgt.alias == 'next':
                g += ' + %s' % self.step_expr(t)
            ptr_stmt = 'p%d[%s] = %s;' % (t.i, g, self.store_value())
            conds = self.own_conds(t)
            self.labels.add('store-through-iv-pointer')
            if conds:
                return ['if (%s)' % ' && '.join(conds), '  ' + ptr_stmt]
            return [ptr_stmt]
        stmts = self.store_stmt(g, self.store_value())
        conds = self.own_conds(t)
        if conds:
            return ['if (%s) {' % ' && '.join(conds)] + ['  ' + s for s in stmts] + ['}']
        return stmts

    def own_conds(self, t):
        conds = []
        cx = self.cx(t)
        if t.ex < t.cspan:
            conds.append('%s < %d' % (cx, t.ex))
        if t.dims >= 2 and t.ey < self.B[1]:
            conds.append('ty < %d' % t.ey)
        return conds

    def store_value(self):
        r = self.r
        if self.T == 'int':
            return '(%s ^ %s) & 63' % (self.read(r.choice(self.tiles)), self.read(r.choice(self.tiles)))
        return '%s + %s * %s' % (self.read(r.choice(self.tiles)), self.read(r.choice(self.tiles)),
                                 self.ty['half'])

    # ---------------------------------------------------------------- host
    def plan_cases(self):
        """Launch cases: a main case (thousands of blocks, 16-64 tiles), a mini case, and on some
        kernels trip counts 0..3."""
        r = self.r
        self.offval = r.randrange(0, 6) if self.offi else 0
        if self.offi == 'param':
            self.offval = r.randrange(0, 6)
        cases = []
        grid = r.choice([2048, 2048, 2560, 3000, 4096])
        ntl = r.choice([16, 17, 24, 32, 33, 48, 64])
        cases.append(dict(name='main', grid=grid, ntl=ntl, small=False))
        cases.append(dict(name='mini', grid=r.randrange(5, 40), ntl=r.randrange(4, 9), small=True))
        if r.random() < 0.4:
            for n in r.sample([0, 1, 2, 3], r.randrange(1, 5)):
                cases.append(dict(name='trip%d' % n, grid=r.randrange(3, 300), ntl=n, small=True))
            self.L('tripcounts')
        for s in self.srcs:
            if s.base_form == 'lit':
                s.lit_nr = r.choice([1, 3, 16, 37])
                s.lit_rs = max(self.region(s, c['ntl']) for c in cases)
        # Memory: read-only sources share regions between blocks where one each would be too big;
        # then shrink the main case until the buffers fit.
        esz = self.ty['size']
        for s in self.srcs:
            c = cases[0]
            if s.base_form == 'lin' and not s.alias:
                if c['grid'] * self.region(s, c['ntl']) * esz > SRC_BYTES:
                    s.base_form = 'mod'
            if s.base_form == 'lit' and min(s.lit_nr, c['grid']) * s.lit_rs * esz > SRC_BYTES:
                s.base_form = 'mod'
        for _ in range(20):
            if self.case_bytes(cases[0]) <= self.byte_limit():
                break
            c = cases[0]
            if c['ntl'] > 16:
                c['ntl'] = max(16, c['ntl'] // 2)
            elif c['grid'] > 512:
                c['grid'] = max(512, c['grid'] // 2)
            else:
                break
        self.cases = cases
        self.manifest_case = '%s grid=%d tiles=%d block=%dx%dx%d' % (
            cases[0]['name'], cases[0]['grid'], cases[0]['ntl'], *self.B)

    def byte_limit(self):
        return ALIAS_BYTES if any(s.alias for s in self.srcs) else 6 * SRC_BYTES

    def region(self, s, ntl):
        """Elements of one block's region of source s (all its tiles) for ntl tiles."""
        return max(self.span(t, ntl) for t in s.tiles)

    def src_layout(self, s, c):
        """(nr, rs, alloc elements, guard bound) of source s in case c."""
        r = self.r
        ntl, grid = c['ntl'], c['grid']
        esz = TYPES[self.T]['size']
        if self.iv == 'gridstride':
            # The loop walks tiles blockIdx.x, +gridDim.x, ... < numTiles (the total).
            one = max((t.ez - 1) * t.pl + (t.ey - 1) * t.ld + t.ex + t.delta + self.offmax()
                      for t in s.tiles)
            total = c['total']
            esz = self.ty['size']
            # Read-only: tiles may overlap (a stride under a tile) to keep the buffer small.
            rs = one if s.alias else max(1, min(one, SRC_BYTES // esz // max(total, 1)))
            alloc = max(total - 1, 0) * rs + one
            return None, rs, alloc
        reg = self.region(s, ntl)
        if s.base_form == 'lit':
            nr, rs = s.lit_nr, s.lit_rs
            return nr, rs, (min(nr, grid) - 1) * rs + reg
        if s.base_form == 'lin':
            rs = reg
            return grid, rs, (grid - 1) * rs + reg
        # 'mod': as many regions as fit the budget, disjoint or overlapping.
        rs = reg if c.setdefault('overlap_' + s.name, r.random() < 0.7) else max(1, reg // 3)
        cap = max(1, SRC_BYTES // max(1, rs * esz))
        nr = min(grid, c.setdefault('nr_' + s.name, r.choice([1, 7, 64, 256, 4096])), cap)
        nr = max(nr, 1)
        return nr, rs, (min(nr, grid) - 1) * rs + reg

    def case_bytes(self, c):
        total = 0
        esz = self.ty['size']
        if self.iv == 'gridstride':
            c['total'] = c['grid'] * c['ntl'] - (c['grid'] // 3 if c['ntl'] else 0)
        for s in self.srcs:
            lay = self.src_layout(s, c)
            total += lay[2] * esz
        total += c['grid'] * self.NT * esz * (3 if self.store else 1)
        return total

    def host_text(self):
        r = self.r
        T = self.T
        H = []
        H.append('static void run_%s(FzRun& run) {' % self.id)
        seed_base = self.r.randrange(1, 1 << 40)
        for ci, c in enumerate(self.cases):
            if self.iv == 'gridstride':
                c['total'] = c['grid'] * c['ntl'] - (c['grid'] // 3 if c['ntl'] else 0)
            if c['small']:
                H.append('  {  // case %s: %d blocks, %d tiles' % (c['name'], c['grid'], c['ntl']))
            else:
                H.append('  if (!fz_small) {  // case %s: %d blocks, %d tiles' % (
                    c['name'], c['grid'], c['ntl']))
            grid = c['grid']
            args = {}
            written = []
            for si, s in enumerate(self.srcs):
                nr, rs, alloc = self.src_layout(s, c)
                alloc_total = alloc + s.mis
                if s.guard_n:
                    # The bound cuts the source short: the last tiles are partly outside.
                    cut = r.choice([1, 7, max(1, alloc // 5), max(1, alloc // 2), s.tiles[0].ex + 3])
                    n = max(0, alloc - cut) if c['ntl'] else alloc
                    args[s.guard_n] = str(n - 0)
                    # The buffer ends at the bound: nothing past it may be read.
                    alloc_total = max(n, 0) + s.mis
                    # A clamp needs at least one element.
                    if any(t.guard == 'clamp' for t in s.tiles) and n < 1:
                        args[s.guard_n] = '1'
                        alloc_total = 1 + s.mis
                H.append('    %s* b_%s = fz_in<%s>(run, %d, %dULL);' % (T, s.name, T, alloc_total,
                                                                       seed_base + 16 * ci + si))
                args[s.name] = 'b_%s + %d' % (s.name, s.mis) if s.mis else 'b_%s' % s.name
                if s.hidden == 'param':
                    args[s.name + '_w'] = args[s.name]
                if self.iv == 'gridstride' or s.base_form in ('mod', 'lin'):
                    args[self.rs_name(s)] = str(rs)
                if s.base_form == 'mod' and self.iv != 'gridstride':
                    args['nr_' + s.name] = str(nr)
                if s.alias:
                    written.append(('b_%s' % s.name, alloc_total))
            for t in self.tiles:
                if t.ld_param:
                    args['ld%d' % t.i] = str(t.ld)
            nout = grid * self.NT
            H.append('    %s* b_out = fz_out<%s>(run, %d);' % (T, T, nout))
            args['out'] = 'b_out'
            outs = [('b_out', nout)]
            if self.store and self.store_target == 'out':
                n2 = grid * 2 * self.NT
                H.append('    %s* b_out2 = fz_out<%s>(run, %d);' % (T, T, n2))
                args['out2'] = 'b_out2'
                outs.append(('b_out2', n2))
            if self.red:
                H.append('    %s* b_outr = fz_out<%s>(run, %d);' % (T, T, grid))
                args['outr'] = 'b_outr'
                outs.append(('b_outr', grid))
            if self.shfl:
                nw = grid * (self.NT // 32)
                H.append('    %s* b_outw = fz_out<%s>(run, %d);' % (T, T, nw))
                args['outw'] = 'b_outw'
                outs.append(('b_outw', nw))
            if self.store == 'devglobal':
                tgt = self.store_target
                p = 'b_out2' if tgt == 'out' else args[tgt.name]
                H.append('    { %s* p = %s; FZ_CK(cudaMemcpyToSymbol(g_%s, &p, sizeof(p))); }' % (
                    T, p, self.id))
            ntl_arg = c['total'] if self.iv == 'gridstride' else c['ntl']
            if self.bound == 'mem-param':
                H.append('    int* b_nt = fz_int(run, %d);' % ntl_arg)
                args['ntp'] = 'b_nt'
            else:
                args['numTiles'] = str(ntl_arg)
            if self.offi == 'param':
                args['off'] = str(self.offval)
            if self.exit_rows:
                args['rows_out'] = str(self.exit_rows)
            if self.stencil_w:
                nw = max([1024] + [t.H + 1 for t in self.tiles if t.xs == 'halo'])
                H.append('    %s* b_w = fz_in<%s>(run, %d, %dULL);' % (T, T, nw, seed_base + 999))
                args['w'] = 'b_w'
            args.update(self.extra_args)
            call = ', '.join(args[n] for _, n in self.params)
            fn = self.fn + ('<%d>' % self.tiles[0].ex if self.template else '')
            if self.ns:
                fn = self.ns + '::' + fn
            smem = ', %d' % self.dyn['bytes'] if self.dyn else ''
            H.append('    %s<<<%d, dim3(%d, %d, %d)%s>>>(%s);' % (fn, grid, *self.B, smem, call))
            H.append('    fz_launched();')
            for b, n in outs + written:
                H.append('    fz_hash(run, %s, %d);' % (b, n))
            H.append('    fz_free(run);')
            H.append('  }')
        H.append('}')
        return H


class MatmulKernel(Kernel):
    """The classic shared-memory matmul C = A * B on a 2-D grid: two tiles that walk along a row
    of A and down a column of B, optionally guarded for ragged M, N, K."""

    def emit(self):
        r = self.r
        P = self.P
        self.T = T = pick(r, {'float': 50, 'double': 15, 'int': 15, 'float2': 12, 'float4': 8})
        self.ty = ty = TYPES[T]
        TS = pick(r, {8: 20, 16: 50, 32: 30})
        if T == 'float4' and TS == 32:
            TS = 16
        self.B = (TS, TS, 1)
        self.NT = TS * TS
        self.L('matmul', '2d', 'grid2d', T, 'multi-tile', 'compute-kloop')
        form = pick(r, {'trailing': 75, 'rotated': 25})
        self.form = form
        self.L(form)
        iv = pick(r, {'k0': 40, 'ab': 30, 'counter': 20, 'while': 10})
        self.L('iv-mm-' + iv)
        guard = pick(r, {None: 55, 'ternary': 25, 'ifelse': 20})
        if guard:
            self.L('guard-' + guard)
        fill = r.choice(ty['fills']) if guard else None
        self.barrier = pick(r, {'sync': 75, 'block': 10, 'ttb': 5, 'macro': 10})
        if self.barrier != 'sync':
            self.L('barrier-' + self.barrier)
        amacro = r.random() < 0.3
        if amacro:
            self.L('macro-access')
        unroll = r.random() < 0.4
        r.random()   # a draw kept so that existing seeds give the same kernels
        pads = [r.choice([0, 0, 1, 3, 4, 16]) for _ in range(3)]
        if any(pads):
            self.L('padded')
        isint = T == 'int'

        def m(e):
            return '(%s & 63)' % e if isint else e

        out = ['// ==== BEGIN KERNEL %s @LABELS@' % self.id]
        if self.barrier == 'macro':
            out.append('#define %sSYNC() __syncthreads()' % P)
        out.append('#define %sT %d' % (P, TS))
        if amacro:
            out.append('#define %sAS(i, j) As[i][j]' % P)
            out.append('#define %sBS(i, j) Bs[i][j]' % P)
        ts = P + 'T'
        sig = '%s* C, const %s* A, const %s* B, int M, int N, int K, int lda, int ldb, int ldc' % (T, T, T)
        if iv == 'counter':
            sig += ', int numTiles'
        out.append('%s %s(%s) {' % (self.kernel_head(), self.fn, sig))
        b = []
        b.append('__shared__ %s As[%s][%s];' % (T, ts, ts))
        b.append('__shared__ %s Bs[%s][%s];' % (T, ts, ts))
        b.append('const int tx = threadIdx.x, ty = threadIdx.y;')
        b.append('const int row = blockIdx.y * %s + ty, col = blockIdx.x * %s + tx;' % (ts, ts))
        if self.barrier == 'block':
            b.append('cg::thread_block block = cg::this_thread_block();')
        b.append('%s acc = %s;' % (T, ty['zero']))

        def loads(acol, brow, aidx, bidx):
            res = []
            for (dst, idx, conds) in (('As[ty][tx]', aidx, 'row < M && %s < K' % acol),
                                      ('Bs[ty][tx]', bidx, '%s < K && col < N' % brow)):
                if guard == 'ternary':
                    res.append('%s = (%s) ? %s : %s;' % (dst, conds, idx, fill))
                elif guard == 'ifelse':
                    res += ['if (%s)' % conds, '  %s = %s;' % (dst, idx), 'else',
                            '  %s = %s;' % (dst, fill)]
                else:
                    res.append('%s = %s;' % (dst, idx))
            return res

        tail = []
        # The SGEMM tutorials' form: the pointer parameters moved to the block's tiles before the
        # loop and stepped in the compute phase. Drawn from a generator of its own, so that a seed
        # gives the kernel it gave before the form existed, or that kernel with its pointers bumped.
        br = random.Random('tilepipe-fuzz-bump:%d:%d' % (self.seed, self.idx))
        bump = iv == 'k0' and br.random() < 0.5
        bump_lines, bump_late, bump_after = [], False, False
        if bump:
            self.L('iv-mm-bump')
            b.append('A += blockIdx.y * %s * lda;' % ts)
            b.append('B += blockIdx.x * %s;' % ts)
            bump_lines = (['A += %s, B += %s * ldb;' % (ts, ts)] if br.random() < 0.3 else
                          ['A += %s;' % ts, 'B += %s * ldb;' % ts])
            bump_late = br.random() < 0.5
            if bump_late:
                self.L('bump-late')
            # After the trailing barrier: the for loop's tail increments (trailing form only; at
            # the end of a rotated loop's body they are the compute phase's, as bump-late is).
            bump_after = form == 'trailing' and br.random() < 0.4
            if bump_after:
                self.L('bump-after')
        # Vector stores through a cast (`reinterpret_cast<float4 *>(&As[r][c * 4])[0] = ...`), as
        # kernels write their 16-byte loads: the first TS * TS / W threads each copy W elements of
        # each tile. Drawn from a generator of its own, so that a seed gives the kernel it gave
        # before the form existed, or that kernel with its tiles stored as vectors.
        vr = random.Random('tilepipe-fuzz-vector:%d:%d' % (self.seed, self.idx))
        vec = None
        if T in ('float', 'int', 'double') and not guard and not bump and iv in ('k0', 'counter') and \
                vr.random() < 0.5:
            W = 2 if T == 'double' else vr.choice([2, 4, 4])
            vec = ('%s%d' % (T, W), W)
            self.L('vector-store', 'vec%d' % W)
            # Every vector of a source row starts on its own size: the pitches are whole vectors.
            pads = [p - p % W for p in pads]
            b.append('const int vl = ty * %s + tx, vrow = vl / (%s / %d), vcol = vl %% (%s / %d);' % (ts, ts, W, ts, W))
            kk = 'k0' if iv == 'k0' else 't * %s' % ts
            cast = vr.choice(['cpp', 'c', 'deref'])

            def vstore(dst, src):
                if cast == 'cpp':
                    return 'reinterpret_cast<%s *>(&%s)[0] = reinterpret_cast<const %s *>(&%s)[0];' % (
                        vec[0], dst, vec[0], src)
                if cast == 'c':
                    return '((%s *)&%s)[0] = ((const %s *)&%s)[0];' % (vec[0], dst, vec[0], src)
                return '*(%s *)&%s = *(const %s *)&%s;' % (vec[0], dst, vec[0], src)
            self.L('vector-' + cast)
            vcp = ['if (vl < %s * %s / %d) {' % (ts, ts, W),
                   '  ' + vstore('As[vrow][vcol * %d]' % W,
                                 'A[(blockIdx.y * %s + vrow) * lda + %s + vcol * %d]' % (ts, kk, W)),
                   '  ' + vstore('Bs[vrow][vcol * %d]' % W,
                                 'B[(%s + vrow) * ldb + blockIdx.x * %s + vcol * %d]' % (kk, ts, W)),
                   '}']
        if bump:
            head = 'for (int k0 = 0; k0 < K; k0 += %s) {' % ts
            cp = loads('k0 + tx', 'k0 + ty', 'A[ty * lda + tx]', 'B[ty * ldb + tx]')
        elif iv == 'k0':
            head = 'for (int k0 = 0; k0 < K; k0 += %s) {' % ts
            cp = loads('k0 + tx', 'k0 + ty', 'A[row * lda + k0 + tx]', 'B[(k0 + ty) * ldb + col]')
        elif iv == 'ab':
            b.append('const int aBegin = lda * %s * blockIdx.y, aEnd = aBegin + K;' % ts)
            b.append('const int bBegin = %s * blockIdx.x, bStep = %s * ldb;' % (ts, ts))
            head = 'for (int a = aBegin, bb = bBegin; a < aEnd; a += %s, bb += bStep) {' % ts
            cp = loads('a - aBegin + tx', '(a - aBegin) + ty', 'A[a + lda * ty + tx]',
                       'B[bb + ldb * ty + tx]')
        elif iv == 'counter':
            head = 'for (int t = 0; t < numTiles; ++t) {'
            cp = loads('t * %s + tx' % ts, 't * %s + ty' % ts, 'A[row * lda + t * %s + tx]' % ts,
                       'B[(t * %s + ty) * ldb + col]' % ts)
        else:
            b.append('int k0 = 0;')
            head = 'while (k0 < K) {'
            cp = loads('k0 + tx', 'k0 + ty', 'A[row * lda + k0 + tx]', 'B[(k0 + ty) * ldb + col]')
            tail = ['k0 += %s;' % ts]
        if vec:
            cp = vcp
        b.append(head)
        body = []
        if form == 'rotated':
            body.append(self.bar())
        body += cp
        body.append(self.bar())
        if bump and not bump_late and not bump_after:
            body += bump_lines
        if unroll:
            body.append('#pragma unroll')
        a_ = '%sAS(ty, k)' % P if amacro else 'As[ty][k]'
        b_ = '%sBS(k, tx)' % P if amacro else 'Bs[k][tx]'
        body.append('for (int k = 0; k < %s; ++k)' % ts)
        body.append('  acc += %s * %s;' % (m(a_), m(b_)))
        if bump and bump_late and not bump_after:
            body += bump_lines
        if form == 'trailing':
            body.append(self.bar())
        if bump_after:
            body += bump_lines
        body += tail
        b += ['  ' + l for l in body]
        b.append('}')
        b.append('if (row < M && col < N) C[row * ldc + col] = acc;')
        out += ['  ' + l for l in b]
        out.append('}')
        # Host: a main case of thousands of blocks and 16-64 tiles, a mini case, trip counts.
        cases = []
        gx, gy = pick(r, {(64, 32): 30, (32, 64): 20, (128, 16): 15, (48, 48): 15, (96, 32): 20})
        if TS == 32:
            gx, gy = gx // 2, gy // 2   # 1024 threads a block: fewer blocks, as many threads
        ntl = r.choice([16, 24, 32, 48, 64])
        cases.append(('main', gx, gy, ntl, False))
        cases.append(('mini', r.randrange(1, 6), r.randrange(1, 6), r.randrange(4, 8), True))
        if r.random() < 0.4:
            self.L('tripcounts')
            for n in r.sample([0, 1, 2, 3], r.randrange(1, 5)):
                cases.append(('trip%d' % n, r.randrange(1, 9), r.randrange(1, 9), n, True))
        H = ['static void run_%s(FzRun& run) {' % self.id]
        seed_base = r.randrange(1, 1 << 40)
        for ci, (name, gx_, gy_, nt, small) in enumerate(cases):
            M, N, K = gy_ * TS, gx_ * TS, nt * TS
            if guard and nt:
                # Ragged edges: the last tiles and the last blocks are partly outside.
                M -= r.randrange(0, TS)
                N -= r.randrange(0, TS)
                K -= r.randrange(0, TS)
            M, N = max(M, 1), max(N, 1)
            lda, ldb, ldc = K + pads[0], N + pads[1], N + pads[2]
            nA = max((M - 1) * lda + K, 1) if guard else gy_ * TS * lda
            nB = max((K - 1) * ldb + N, 1) if guard else max(K, 1) * ldb
            if not guard:
                nA = max((gy_ * TS - 1) * lda + K, 1)
                nB = max((K - 1) * ldb + gx_ * TS, 1)
            nC = (M - 1) * ldc + N
            H.append('  %s{  // case %s: %dx%d blocks, %d tiles, M=%d N=%d K=%d' % (
                '' if small else 'if (!fz_small) ', name, gx_, gy_, nt, M, N, K))
            H.append('    %s* b_A = fz_in<%s>(run, %d, %dULL);' % (T, T, nA, seed_base + 4 * ci))
            H.append('    %s* b_B = fz_in<%s>(run, %d, %dULL);' % (T, T, nB, seed_base + 4 * ci + 1))
            H.append('    %s* b_C = fz_out<%s>(run, %d);' % (T, T, nC))
            args = 'b_C, b_A, b_B, %d, %d, %d, %d, %d, %d' % (M, N, K, lda, ldb, ldc)
            if iv == 'counter':
                args += ', %d' % nt
            H.append('    %s<<<dim3(%d, %d), dim3(%d, %d)>>>(%s);' % (self.fn, gx_, gy_, TS, TS, args))
            H.append('    fz_launched();')
            H.append('    fz_hash(run, b_C, %d);' % nC)
            H.append('    fz_free(run);')
            H.append('  }')
        H.append('}')
        out += H
        out.append('// ==== END KERNEL %s' % self.id)
        out[0] = out[0].replace('@LABELS@', ','.join(sorted(self.labels)))
        self.manifest_case = 'main grid=%dx%d tiles=%d block=%dx%dx1' % (gx, gy, ntl, TS, TS)
        return '\n'.join(out) + '\n'


class NamesMatmulKernel(Kernel):
    """Matmul-like kernels (C = A * B, two 2-D tiles of at least 2 KiB a stage, which tensor copies
    can take) for the names that the host launcher beside a kernel and the rewritten launch sites
    write again (names classes, see Kernel.apply_names):

    shadow-typedef: a kernel-local `typedef T real_t` (or `using`) beside a namespace's `typedef U
      real_t` of another type, named by the tiles' element type and/or a row stride
      `pitch_bytes / sizeof(real_t)` (the launcher would find the namespace's type: the tiles must
      stay off the copy engine); its twin (shadow-typedef-twin) has the namespace's type alone,
      the kernel's element type, which the launcher may use.
    samename-ns: kernels of one name in several namespaces (unnamed or the kernel's namespace
      itself, a named one, one nested in `extern "C++"`), each scaling its result differently, each
      launched by one or two routes: unqualified, qualified, through a namespace alias, through
      `using namespace` and through a using-declaration (route-*), from functions in the namespace
      or from the driver; every launch writes its own output.
    """

    OTHER = {'float': 'double', 'double': 'float', 'int': 'double', 'float2': 'float4',
             'float4': 'float2'}

    def __init__(self, seed, idx, cls):
        Kernel.__init__(self, seed, idx)
        # A generator of its own: the class, not the seed's general kernels, decides this kernel.
        self.r = random.Random('tilepipe-fuzz-names-mm:%d:%d' % (seed, idx))
        self.names = cls
        self.ns = 'fz_' + self.id

    def lit(self, v):
        return {'float': '%d.0f', 'double': '%d.0', 'int': '%d', 'float2': '%d.0f',
                'float4': '%d.0f'}[self.T] % v

    def mm_kernel(self, fn, elem, local, a_ld, b_ld, a_param, b_param, scale, scale_in_loop):
        """The lines of one matmul kernel named fn (unindented)."""
        r = self.r
        T, ty, ts = self.T, self.ty, self.ts
        isint = T == 'int'

        def m(e):
            return '(%s & 63)' % e if isint else e

        sig = '%s* C, const %s* A, const %s* B, int M, int N, int K, int %s, int %s, int ldc' % (
            T, T, T, a_param, b_param)
        if self.iv == 'counter':
            sig += ', int numTiles'
        out = ['%s %s(%s) {' % (self.kernel_head(), fn, sig)]
        b = list(local)
        b.append('__shared__ %s As[%s][%s];' % (elem, ts, ts))
        b.append('__shared__ %s Bs[%s][%s];' % (elem, ts, ts))
        b.append('const int tx = threadIdx.x, ty = threadIdx.y;')
        b.append('const int row = blockIdx.y * %s + ty, col = blockIdx.x * %s + tx;' % (ts, ts))
        if self.barrier == 'block':
            b.append('cg::thread_block block = cg::this_thread_block();')
        b.append('%s acc = %s;' % (T, ty['zero']))
        iv, guard, fill = self.iv, self.guard, self.fill
        kk = 't * %s' % ts if iv == 'counter' else 'k0'
        loads = []
        for dst, idx, conds in (('As[ty][tx]', 'A[row * %s + %s + tx]' % (a_ld, kk),
                                 'row < M && %s + tx < K' % kk),
                                ('Bs[ty][tx]', 'B[(%s + ty) * %s + col]' % (kk, b_ld),
                                 '%s + ty < K && col < N' % kk)):
            if guard == 'ternary':
                loads.append('%s = (%s) ? %s : %s;' % (dst, conds, idx, fill))
            elif guard == 'ifelse':
                loads += ['if (%s)' % conds, '  %s = %s;' % (dst, idx), 'else',
                          '  %s = %s;' % (dst, fill)]
            else:
                loads.append('%s = %s;' % (dst, idx))
        tail = []
        if iv == 'k0':
            head = 'for (int k0 = 0; k0 < K; k0 += %s) {' % ts
        elif iv == 'counter':
            head = 'for (int t = 0; t < numTiles; ++t) {'
        else:
            b.append('int k0 = 0;')
            head = 'while (k0 < K) {'
            tail = ['k0 += %s;' % ts]
        b.append(head)
        body = []
        if self.form == 'rotated':
            body.append(self.bar())
        body += loads
        body.append(self.bar())
        if r.random() < 0.3:
            body.append('#pragma unroll')
        body.append('for (int k = 0; k < %s; ++k)' % ts)
        prod = '%s * %s' % (m('As[ty][k]'), m('Bs[k][tx]'))
        if scale_in_loop:
            prod = '%s * %s' % (prod, self.lit(scale))
        body.append('  acc += %s;' % prod)
        if self.form == 'trailing':
            body.append(self.bar())
        body += tail
        b += ['  ' + l for l in body]
        b.append('}')
        res = 'acc' if scale_in_loop else 'acc * %s' % self.lit(scale)
        b.append('if (row < M && col < N) C[row * ldc + col] = %s;' % res)
        out += ['  ' + l for l in b]
        out.append('}')
        return out

    def emit(self):
        r = self.r
        P = self.P
        self.T = T = pick(r, {'float': 45, 'double': 15, 'int': 15, 'float2': 13, 'float4': 12})
        self.ty = ty = TYPES[T]
        # Tiles of 2 KiB a stage at least (tensor and bulk copies' threshold), 48 KiB in 3 stages.
        TS = pick(r, {16: 70, 32: 30}) if ty['size'] == 4 else 16
        self.B = (TS, TS, 1)
        self.NT = TS * TS
        self.L('matmul', '2d', 'grid2d', T, 'multi-tile', 'compute-kloop', 'in-namespace')
        if self.names == 'samename-ns':
            self.L('samename-ns')
        self.form = pick(r, {'trailing': 75, 'rotated': 25})
        self.L(self.form)
        self.iv = pick(r, {'k0': 45, 'counter': 30, 'while': 25})
        self.L('iv-mm-' + self.iv)
        self.guard = pick(r, {None: 70, 'ternary': 20, 'ifelse': 10})
        if T in ('float2', 'float4'):   # a vector fill is a temporary the analysis does not follow
            self.guard = None
        self.fill = r.choice(ty['fills']) if self.guard else None
        if self.guard:
            self.L('guard-' + self.guard)
        self.barrier = pick(r, {'sync': 85, 'block': 5, 'ttb': 5, 'macro': 5})
        if self.barrier != 'sync':
            self.L('barrier-' + self.barrier)
        pads = [r.choice([0, 0, 0, 4, 16, 1]) for _ in range(3)]
        if any(pads):
            self.L('padded')
        self.ts = ts = P + 'T' if r.random() < 0.5 else str(TS)
        ns = self.ns
        out = ['// ==== BEGIN KERNEL %s @LABELS@' % self.id]
        if self.barrier == 'macro':
            out.append('#define %sSYNC() __syncthreads()' % P)
        if ts != str(TS):
            out.append('#define %sT %d' % (P, TS))
        launches = []   # (host lines of one launch with '@C@' for its output)
        grid_args = 'b_A, b_B, @M@, @N@, @K@, @LDA@, @LDB@, @LDC@' + (
            ', @NT@' if self.iv == 'counter' else '')
        if self.names == 'shadow-typedef':
            variant = pick(r, {'elem': 35, 'stride': 25, 'both': 15, 'twin': 25})
            tn = r.choice(['real_t', 'elem_t', 'value_type', 'scalar_t'])
            twin = variant == 'twin'
            ns_t = T if twin else self.OTHER[T]
            use_elem = variant in ('elem', 'both') or (twin and r.random() < 0.7)
            use_stride = variant in ('stride', 'both') or (twin and (not use_elem or r.random() < 0.4))
            self.L('shadow-typedef-twin' if twin else 'shadow-typedef')
            if use_elem:
                self.L('typedef-elem')
            stride_of = None
            if use_stride:
                stride_of = r.choice(['A', 'B'])
                self.L('typedef-stride')
            decl = lambda t_: (('typedef %s %s;' % (t_, tn)) if r.random() < 0.5 else
                               'using %s = %s;' % (tn, t_))
            out.append('namespace %s {' % ns)
            out.append(decl(ns_t))
            local = [] if twin else [decl(T)]
            stride = '(pitch_bytes / sizeof(%s))' % tn
            a_ld, a_param = (stride, 'pitch_bytes') if stride_of == 'A' else ('lda', 'lda')
            b_ld, b_param = (stride, 'pitch_bytes') if stride_of == 'B' else ('ldb', 'ldb')
            self.pitch_of = stride_of
            out += self.mm_kernel(self.fn, tn if use_elem else T, local, a_ld, b_ld, a_param, b_param,
                                  1, False)
            out.append('}  // namespace %s' % ns)
            launches.append('    %s::%s<<<@GRID@, @BLOCK@>>>(@C@, %s);' % (ns, self.fn, grid_args))
        else:
            self.pitch_of = None
            launches = self.samename(out, grid_args)
        out += self.mm_host(launches, pads, TS)
        out.append('// ==== END KERNEL %s' % self.id)
        out[0] = out[0].replace('@LABELS@', ','.join(sorted(self.labels)))
        return '\n'.join(out) + '\n'

    def samename(self, out, grid_args):
        """samename-ns: the kernels, the launch functions in the namespace; the driver's launches."""
        r = self.r
        ns, fn, T = self.ns, self.fn, self.T
        keys = [k for k in ('R', 'B', 'C') if r.random() < 0.85]
        while len(keys) < 2:
            k = r.choice([k for k in ('R', 'B', 'C') if k not in keys])
            keys = [x for x in ('R', 'B', 'C') if x in keys or x == k]
        root = pick(r, {'unnamed': 60, 'self': 40})
        nb = r.choice(['b', 'impl', 'v2'])
        no, nc = r.choice(['outer', 'lib']), r.choice(['c', 'fast'])
        path = {'R': '', 'B': nb + '::', 'C': '%s::%s::' % (no, nc)}
        scales = dict(zip(keys, r.sample([1, 2, 3, 4, 5], len(keys))))
        in_loop = r.random() < 0.4
        if 'R' in keys and root == 'unnamed':
            self.L('ns-unnamed')
        if 'C' in keys:
            self.L('extern-cpp')
        out.append('namespace %s {' % ns)

        def kern(k):
            return self.mm_kernel(fn, T, [], 'lda', 'ldb', 'lda', 'ldb', scales[k], in_loop)

        if 'R' in keys:
            if root == 'unnamed':
                out.append('namespace {')
                out += kern('R')
                out.append('}  // namespace')
            else:
                out += kern('R')
        if 'B' in keys:
            out.append('namespace %s {' % nb)
            out += kern('B')
            out.append('}  // namespace %s' % nb)
        if 'C' in keys:
            out += ['namespace %s {' % no, 'extern "C++" {', 'namespace %s {' % nc]
            out += kern('C')
            out += ['}  // namespace %s' % nc, '}', '}  // namespace %s' % no]
        # Launch routes: (kind, place), where each is possible without ambiguity.
        routes = {
            'R': [('unqualified', 'ns'), ('qualified', 'run'), ('alias', 'run'),
                  ('using-namespace', 'run'), ('using-decl', 'run')],
            'B': [('qualified', 'ns'), ('qualified', 'run'), ('alias', 'ns'), ('alias', 'run'),
                  ('using-decl', 'ns'), ('using-decl', 'run'), ('using-namespace', 'run')],
            'C': [('qualified', 'ns'), ('qualified', 'run'), ('alias', 'ns'), ('alias', 'run'),
                  ('using-decl', 'ns'), ('using-decl', 'run'), ('using-namespace', 'ns'),
                  ('using-namespace', 'run')],
        }
        plan = []
        for k in keys:
            for kind, place in r.sample(routes[k], 2 if r.random() < 0.4 else 1):
                plan.append((k, kind, place))
        r.shuffle(plan)
        sig = ('dim3 g, dim3 bl, %s* C, const %s* A, const %s* B, int M, int N, int K, int lda, '
               'int ldb, int ldc' % (T, T, T)) + (', int numTiles' if self.iv == 'counter' else '')
        kargs = 'C, A, B, M, N, K, lda, ldb, ldc' + (', numTiles' if self.iv == 'counter' else '')
        helpers = []
        launches = []
        aliases = set()
        for j, (k, kind, place) in enumerate(plan):
            self.L('route-' + kind)
            q = path[k].rstrip(':')          # the kernel's namespace relative to ns ('' for R)
            call = '<<<g, bl>>>(%s);' % kargs
            if place == 'ns':
                self.L('route-in-ns')
                name = 'launch_%d' % j
                where = ns
                if kind == 'unqualified':
                    body = ['%s%s' % (fn, call)]
                elif kind == 'qualified':
                    body = ['%s%s%s' % (path[k], fn, call)]
                elif kind == 'alias':
                    al = 'al_' + k.lower()
                    if al not in aliases:
                        helpers.append('namespace %s = %s;' % (al, q))
                        aliases.add(al)
                    body = ['%s::%s%s' % (al, fn, call)]
                elif kind == 'using-decl':
                    body = ['using %s%s;' % (path[k], fn), '%s%s' % (fn, call)]
                else:   # using-namespace: of the outer namespace, then c::k (C only)
                    helpers.append('namespace user_%d {' % j)
                    helpers.append('using namespace ::%s::%s;' % (ns, no))
                    where = '%s::user_%d' % (ns, j)
                    body = ['%s::%s%s' % (nc, fn, call)]
                helpers.append('static void %s(%s) {' % (name, sig))
                helpers += ['  ' + l for l in body]
                helpers.append('}')
                if kind == 'using-namespace':
                    helpers.append('}  // namespace user_%d' % j)
                launches.append('    %s::%s(@GRID@, @BLOCK@, @C@, %s);' % (where, name, grid_args))
            else:
                full = '%s%s' % (ns + '::' + path[k], fn)
                kl = '<<<@GRID@, @BLOCK@>>>(@C@, %s);' % grid_args
                if kind == 'qualified':
                    lines = ['%s%s%s' % (r.choice(['', '::']), full, kl)]
                elif kind == 'alias':
                    lines = ['namespace al = %s;' % (ns + ('::' + q if q else '')),
                             'al::%s%s' % (fn, kl)]
                elif kind == 'using-decl':
                    lines = ['using %s;' % full, '%s%s' % (fn, kl)]
                else:
                    if k == 'C' and r.random() < 0.5:
                        lines = ['using namespace %s::%s;' % (ns, no), '%s::%s%s' % (nc, fn, kl)]
                    else:
                        lines = ['using namespace %s;' % (ns + ('::' + q if q else '')),
                                 '%s%s' % (fn, kl)]
                launches.append('\n'.join(['    {'] + ['      ' + l for l in lines] + ['    }']))
        out += helpers
        out.append('}  // namespace %s' % ns)
        self.manifest_extra = ' routes=' + ','.join('%s:%s' % (k, kind) for k, kind, _ in plan)
        return launches

    def mm_host(self, launches, pads, TS):
        """The driver: a main case of thousands of blocks and 16-64 tiles, a mini case, trip counts;
        every launch into an output of its own, poisoned, hashed."""
        r = self.r
        T = self.T
        esz = self.ty['size']
        cases = []
        gx, gy = pick(r, {(64, 32): 30, (32, 64): 20, (128, 16): 15, (48, 48): 15, (96, 32): 20})
        if TS == 32:
            gx, gy = gx // 2, gy // 2   # 1024 threads a block: fewer blocks, as many threads
        ntl = r.choice([16, 24, 32, 48, 64])
        cases.append(('main', gx, gy, ntl, False))
        cases.append(('mini', r.randrange(1, 6), r.randrange(1, 6), r.randrange(4, 8), True))
        if r.random() < 0.4:
            self.L('tripcounts')
            for n in r.sample([0, 1, 2, 3], r.randrange(1, 5)):
                cases.append(('trip%d' % n, r.randrange(1, 9), r.randrange(1, 9), n, True))
        H = ['static void run_%s(FzRun& run) {' % self.id]
        seed_base = r.randrange(1, 1 << 40)
        for ci, (name, gx_, gy_, nt, small) in enumerate(cases):
            M, N, K = gy_ * TS, gx_ * TS, nt * TS
            if self.guard and nt:
                M -= r.randrange(0, TS)
                N -= r.randrange(0, TS)
                K -= r.randrange(0, TS)
            M, N = max(M, 1), max(N, 1)
            lda, ldb, ldc = K + pads[0], N + pads[1], N + pads[2]
            if self.guard:
                nA = max((M - 1) * lda + K, 1)
                nB = max((K - 1) * ldb + N, 1)
            else:
                nA = max((gy_ * TS - 1) * lda + K, 1)
                nB = max((K - 1) * ldb + gx_ * TS, 1)
            nC = (M - 1) * ldc + N
            H.append('  %s{  // case %s: %dx%d blocks, %d tiles, M=%d N=%d K=%d' % (
                '' if small else 'if (!fz_small) ', name, gx_, gy_, nt, M, N, K))
            H.append('    %s* b_A = fz_in<%s>(run, %d, %dULL);' % (T, T, nA, seed_base + 4 * ci))
            H.append('    %s* b_B = fz_in<%s>(run, %d, %dULL);' % (T, T, nB, seed_base + 4 * ci + 1))
            sub = {'@GRID@': 'dim3(%d, %d)' % (gx_, gy_), '@BLOCK@': 'dim3(%d, %d)' % (TS, TS),
                   '@M@': str(M), '@N@': str(N), '@K@': str(K),
                   '@LDA@': str(lda * esz) if self.pitch_of == 'A' else str(lda),
                   '@LDB@': str(ldb * esz) if self.pitch_of == 'B' else str(ldb),
                   '@LDC@': str(ldc), '@NT@': str(nt)}
            for j, l in enumerate(launches):
                H.append('    %s* b_C%d = fz_out<%s>(run, %d);' % (T, j, T, nC))
                s = l.replace('@C@', 'b_C%d' % j)
                for a, b in sub.items():
                    s = s.replace(a, b)
                H.extend(s.split('\n'))
                H.append('    fz_launched();')
            for j in range(len(launches)):
                H.append('    fz_hash(run, b_C%d, %d);' % (j, nC))
            H.append('    fz_free(run);')
            H.append('  }')
        H.append('}')
        self.manifest_case = 'main grid=%dx%d tiles=%d block=%dx%dx1' % (gx, gy, ntl, TS, TS)
        self.manifest_case += getattr(self, 'manifest_extra', '')
        return H


def make_kernel(seed, i, force=None):
    """Kernel i of seed: the kernel object (its labels) and its text."""
    cls = names_class(seed, i, force)
    if cls in NAMES_MATMUL:
        k = NamesMatmulKernel(seed, i, cls)
    else:
        k = Kernel(seed, i)
        if k.r.random() < 0.12 and not cls:
            k = MatmulKernel(seed, i)
            k.r.random()
        k.names = cls
    return k, k.emit()


def with_label(seed, label, count, force=None):
    """The first count kernel indices of seed whose labels hold label (at most 200 * count tried)."""
    out = []
    for i in range(200 * count):
        if len(out) == count:
            break
        if label in make_kernel(seed, i, force)[0].labels:
            out.append(i)
    return out


def batch(seed, indices, force=None):
    with open(os.path.join(HERE, 'prelude.cu.in')) as f:
        prelude = f.read().replace('@SEED@', str(seed))
    parts = [prelude]
    entries = []
    manifest = []
    for i in indices:
        k, text = make_kernel(seed, i, force)
        parts.append(text)
        labels = ','.join(sorted(k.labels))
        entries.append('  {"%s", "%s", run_%s},' % (k.id, labels, k.id))
        manifest.append('%s\t%s\t%s' % (k.id, labels, k.manifest_case))
    main = MAIN.replace('@ENTRIES@', '\n'.join(entries))
    parts.append(main)
    return '\n'.join(parts), manifest


MAIN = r'''// ==== BEGIN MAIN
struct FzEntry {
  const char* id;
  const char* labels;
  void (*run)(FzRun&);
};
static const FzEntry fz_entries[] = {
@ENTRIES@
};

int main(int argc, char** argv) {
  const char* dump = nullptr;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump = argv[++i];
    else if (!strcmp(argv[i], "--small")) fz_small = true;
    else if (!strcmp(argv[i], "--list")) {
      for (const FzEntry& e : fz_entries) printf("%s %s\n", e.id, e.labels);
      return 0;
    } else only.push_back(argv[i]);
  }
  for (const std::string& id : only) {
    bool found = false;
    for (const FzEntry& e : fz_entries) found |= id == e.id;
    if (!found) { fprintf(stderr, "no kernel %s\n", id.c_str()); return 2; }
  }
  for (const FzEntry& e : fz_entries) {
    if (!only.empty()) {
      bool want = false;
      for (const std::string& id : only) want |= id == e.id;
      if (!want) continue;
    }
    FzRun run;
    if (dump) {
      std::string b = std::string(dump) + "/" + e.id;
      run.bin = fopen((b + ".bin").c_str(), "wb");
      run.layout = fopen((b + ".layout").c_str(), "w");
      if (!run.bin || !run.layout) { perror(b.c_str()); return 1; }
    }
    e.run(run);
    if (run.bin) { fclose(run.bin); fclose(run.layout); }
    printf("%s %s %016llx\n", e.id, e.labels, (unsigned long long)run.hash);
    fflush(stdout);
  }
  return 0;
}
// ==== END MAIN
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--seed', type=int, required=True)
    ap.add_argument('--kernels', type=int, default=100, help='kernels in the batch (default 100)')
    ap.add_argument('--only', help='comma-separated kernel indices: only these')
    ap.add_argument('-o', '--output', required=True)
    ap.add_argument('--manifest', help='one line per kernel: id, labels, main case')
    ap.add_argument('--labels', help='comma-separated names classes (%s): kernel i is of the '
                    '(i mod count)-th; the same --labels reproduce it' % ', '.join(NAMES_CLASSES))
    ap.add_argument('--with-label', help='the first --kernels kernels of the seed whose labels hold '
                    'this one (`vector-store`), each with the id it has in the full batch')
    a = ap.parse_args()
    force = [x for x in (a.labels or '').split(',') if x]
    bad = [x for x in force if x not in NAMES_CLASSES]
    if bad:
        ap.error('--labels takes names classes (%s), not %s' % (', '.join(NAMES_CLASSES),
                                                               ', '.join(bad)))
    if a.with_label:
        idx = with_label(a.seed, a.with_label, a.kernels, force or None)
    else:
        idx = [int(x) for x in a.only.split(',')] if a.only else list(range(a.kernels))
    text, manifest = batch(a.seed, idx, force or None)
    with open(a.output, 'w') as f:
        f.write(text)
    if a.manifest:
        with open(a.manifest, 'w') as f:
            f.write('\n'.join(manifest) + '\n')


if __name__ == '__main__':
    main()
