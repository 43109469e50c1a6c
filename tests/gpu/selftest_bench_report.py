#!/usr/bin/env python3
"""Tests of bench_report.py (the report half of benchmark.sh), on the CPU: the stored H200 record
renders as its markdown and its derived numbers follow from its measurements; a synthetic record
(incomplete, a failed variant, a floor that cannot launch) renders its tables and geomean; and
raw notes as the driver writes them become the record's medians, quartiles, floors and statuses.

  python3 tests/gpu/selftest_bench_report.py        (CTest: bench.report)
"""
import copy
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import bench_report as br  # noqa: E402

RECORD = os.path.join(ROOT, 'docs', 'benchmark', '2026-12-01-h200')


def variant(status='ok', median=None, regs=32, blocks=8, gbps=(4000.0,)):
    v = {'status': status, 'median_ms': median, 'p25_ms': median, 'p75_ms': median, 'min_ms': median,
         'max_ms': median, 'spread': 0.0 if median else None, 'launches': 21 if median else 0,
         'rounds': 1 if median else 0, 'round_medians_ms': [median] if median else [], 'regs': regs,
         'smem_bytes': 1024, 'local_bytes': 0, 'threads_per_block': 256, 'blocks_per_sm': blocks,
         'warps_per_sm': blocks * 8 if blocks is not None else None,
         'copy_gbps_measured': list(gbps) if median else []}
    return v


def synthetic():
    """Two kernels: one where every variant ran; one where `always` failed to launch, the
    compute-only variant cannot launch, and the record stopped before `fast` ran."""
    rec = {'schema': br.SCHEMA, 'date': '2026-12-02T00:00:00Z', 'started': '2026-12-01T23:59:00Z',
           'ran': True, 'complete': False,
           'gpu': {'name': 'Test GPU', 'compute_capability': '9.0'}, 'nvidia_driver': '1.2.3',
           'cuda_driver_api': 13000, 'cuda_runtime': 12080, 'cuda_version': '12.8', 'nvcc': 'V12.8.1',
           'arch': 'sm_90', 'rounds': 2, 'launches_per_round': 21,
           'prepared': {'commit': 'abc', 'date': 'x', 'tilepipe': 'tilepipe 0.1.0', 'specs': 'a b'},
           'variants': [{'name': 'always', 'tilepipe_options': '--plan=always'},
                        {'name': 'fast', 'tilepipe_options': '--fast'}],
           'kernels': [
               {'spec': 'a', 'kernel': 'k1', 'case': 'big', 'index': 3, 'moved_bytes': 4 * 10**9,
                'variants': {'original': variant(median=2.0), 'always': variant(median=1.0, regs=40),
                             'fast': variant(median=0.5), 'compute_only': variant(median=0.25)}},
               {'spec': 'b', 'kernel': 'k2<1, 2>', 'case': 'huge', 'index': 0, 'moved_bytes': 8 * 10**9,
                'variants': {'original': variant(median=4.0, gbps=(2000.0, 4000.0)),
                             'always': variant('failed', blocks=None),
                             'fast': variant('not run', regs=None, blocks=None),
                             'compute_only': variant('cannot launch', regs=79, blocks=0)}}],
           'geomean': {}}
    return br.derive(rec)


class StoredRecord(unittest.TestCase):
    def setUp(self):
        with open(RECORD + '.json') as f:
            self.rec = json.load(f)

    def test_renders_as_its_markdown(self):
        with open(RECORD + '.md') as f:
            stored = f.read()
        mine = br.markdown(self.rec)
        at = '\nGPU: '
        self.assertIn(at, stored)
        self.assertEqual(stored[stored.index(at) + 1:], mine[mine.index(at) + 1:])

    def test_derived_numbers_follow_from_the_measurements(self):
        self.assertEqual(self.rec, br.derive(copy.deepcopy(self.rec)))
        # ... and a wrong one would be noticed.
        bad = copy.deepcopy(self.rec)
        bad['kernels'][0]['variants']['default']['median_ms'] *= 2
        self.assertNotEqual(self.rec['geomean'], br.derive(bad)['geomean'])


class Synthetic(unittest.TestCase):
    def setUp(self):
        self.rec = synthetic()
        self.md = br.markdown(self.rec)

    def test_floors(self):
        k1, k2 = self.rec['kernels']
        # 4 GB at 4000 GB/s: 1 ms, above the compute-only 0.25 ms.
        self.assertEqual({'compute_only_ms': 0.25, 'memory_ms': 1.0, 'floor_ms': 1.0, 'bound': 'memory'},
                         k1['floors'])
        # The best bandwidth measured counts; no compute-only floor where it cannot launch.
        self.assertEqual(4000.0, k2['copy_gbps'])
        self.assertEqual({'compute_only_ms': None, 'memory_ms': 2.0, 'floor_ms': 2.0, 'bound': 'memory'},
                         k2['floors'])
        self.assertEqual(2.0, k1['variants']['always']['speedup'])
        self.assertEqual(0.5, k1['variants']['fast']['floor_ratio'])

    def test_geomean_leaves_out_what_did_not_run(self):
        self.assertEqual({'speedup': 2.0, 'kernels': 1}, self.rec['geomean']['always'])
        self.assertEqual({'speedup': 4.0, 'kernels': 1}, self.rec['geomean']['fast'])
        self.assertIn('geomean speedup, always: 2.000x over 1 kernel(s); 1 left out (not ok: see the table)\n',
                      self.md)
        self.assertIn('geomean speedup, fast: 4.000x over 1 kernel(s); 1 left out', self.md)

    def test_tables(self):
        self.assertIn('GPU: Test GPU (cc 9.0), NVIDIA driver 1.2.3, CUDA runtime 12.8, nvcc V12.8.1, sm_90; '
                      '2 round(s) of 21 timed launches; INCOMPLETE', self.md)
        self.assertIn('| kernel | timed case | compute-only ms | memory floor ms | floor | original ms | '
                      'original / floor | always ms | always speedup | always / floor | fast ms | fast speedup '
                      '| fast / floor |\n|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n', self.md)
        self.assertIn('| a: k1 | big | 0.2500 | 1.0000 | memory | 2.0000 | 2.00 | 1.0000 | 2.00x | 1.00 | '
                      '0.5000 | 4.00x | 0.50 |\n', self.md)
        self.assertIn('| b: k2<1, 2> | huge | cannot launch | 2.0000 | memory | 4.0000 | 2.00 | failed | - | - | '
                      'not run | - | - |\n', self.md)
        self.assertIn('| a: k1 | 32 | 1024 | 8 | 40 | 1024 | 8 | 32 | 1024 | 8 | 32 | 1024 | 8 |\n', self.md)
        self.assertIn('| b: k2<1, 2> | 32 | 1024 | 8 | 32 | 1024 | - | - | 1024 | - | 79 | 1024 | 0 |\n', self.md)
        # A rewrite that fails where the original ran is called a bug; a variant that did not run is not.
        self.assertIn('BUG: a rewrite that differs from its original or fails where it ran: b: k2<1, 2>, always\n',
                      self.md)

    def test_complete_and_not_run(self):
        rec = synthetic()
        rec['complete'] = True
        self.assertIn('21 timed launches; complete\n', br.markdown(rec))
        rec['ran'] = False
        self.assertIn('Nothing ran: no usable GPU', br.markdown(rec))


DRIVER = '''const std::vector<tpv::CaseInfo> &tpv::cases() {
  static const std::vector<CaseInfo> All = {
  {"k", "small", false, true, &tpv_spec::case_0, {{"out", "float", sizeof(float), tpv::Out, &tpv::compareElements<float>}}, &tpv_spec::bytes_0, &tpv_spec::moved_0, &tpv_spec::launch_0},
  {"k", "big \\"one\\"", true, false, &tpv_spec::case_1, {}, &tpv_spec::bytes_1, &tpv_spec::moved_1, &tpv_spec::launch_1},
  {"k2<1, 2>", "huge", true, false, &tpv_spec::case_2, {}, &tpv_spec::bytes_2, &tpv_spec::moved_2, &tpv_spec::launch_2}};
  return All;
}
'''


class FromRawNotes(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        t = self.tmp.name
        self.bundle, self.raw = os.path.join(t, 'bundle'), os.path.join(t, 'raw')
        os.makedirs(os.path.join(self.bundle, '_floor', 's'))
        os.makedirs(os.path.join(self.raw, 's'))
        with open(os.path.join(self.bundle, '_floor', 's', 'driver.cu'), 'w') as f:
            f.write(DRIVER)
        with open(os.path.join(self.bundle, 'manifest.json'), 'w') as f:
            json.dump({'prepared': {'commit': 'c', 'date': 'd', 'tilepipe': 'tilepipe 0.1.0', 'specs': 's'},
                       'variants': [{'name': 'v', 'tilepipe_options': '--plan=always'}]}, f)
        self.write('meta.txt', 'started=S\ndate=D\nran=true\ncomplete=false\narch=sm_90\nrounds=2\n'
                               'nvcc=V13.0.88\nnvidia_driver=580\n')
        device = {'name': 'G', 'compute_capability': '9.0', 'cuda_driver_api': 13000, 'cuda_runtime': 13000}
        for key, regs, blocks in (('original', 32, 8), ('v', 40, 4), ('compute_only', 79, 0)):
            self.write('s/%s.info.json' % key, json.dumps({'device': device, 'resources': True, 'cases': [
                {'index': 1, 'kernel': 'k', 'case': 'big "one"', 'moved_bytes': 4 * 10**9, 'threads_per_block': 256,
                 'regs': regs, 'smem_bytes': 512, 'local_bytes': 0, 'blocks_per_sm': blocks},
                {'index': 2, 'kernel': 'k2<1, 2>', 'case': 'huge', 'moved_bytes': 10**9, 'threads_per_block': 128,
                 'regs': regs, 'smem_bytes': 512, 'local_bytes': 0, 'blocks_per_sm': blocks}]}))
        # The original: two rounds of case 1 (launch times 1..21 ms, then 2..22), one of case 2.
        self.write('s/original.r1.txt', 'ran 0\n' + self.timed(1, 1.0) + self.timed(2, 10.0, 3000.0))
        self.write('s/original.r2.txt', 'skipped 0\n' + self.timed(1, 2.0, 4100.0))
        # The variant: one round, then the budget ran out; it differs in case 2's kernel only.
        self.write('s/v.r1.txt', self.timed(1, 0.5) + self.timed(2, 5.0))
        self.write('s/v.compare.json', json.dumps({'cases': [
            {'kernel': 'k', 'case': 'small', 'outputs': 'bitwise equal'},
            {'kernel': 'k', 'case': 'big "one"', 'outputs': 'bitwise equal'},
            {'kernel': 'k2<1, 2>', 'case': 'huge', 'outputs': 'DIFFER'}], 'passed': False}))
        self.write('s/compute_only.status', 'cannot launch')

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, rel, text):
        with open(os.path.join(self.raw, rel), 'w') as f:
            f.write(text)

    @staticmethod
    def timed(ci, first, gbps=4000.0):
        ms = [first + i for i in range(21)]
        return 'time %d %.5f 1\nlaunches %d %s\ncopy_gbps %d %.1f\nran %d\n' % (
            ci, sorted(ms)[10], ci, ' '.join('%.5f' % t for t in ms), ci, gbps, ci)

    def test_record(self):
        rec = br.record(self.bundle, self.raw)
        self.assertEqual(['schema', 'date', 'started', 'ran', 'complete', 'gpu', 'nvidia_driver',
                          'cuda_driver_api', 'cuda_runtime', 'cuda_version', 'nvcc', 'arch', 'rounds',
                          'launches_per_round', 'prepared', 'variants', 'kernels', 'geomean'], list(rec))
        self.assertEqual((True, False, '13.0', 2), (rec['ran'], rec['complete'], rec['cuda_version'], rec['rounds']))
        k1, k2 = rec['kernels']
        self.assertEqual(('s', 'k', 'big "one"', 1, 4 * 10**9),
                         (k1['spec'], k1['kernel'], k1['case'], k1['index'], k1['moved_bytes']))
        o = k1['variants']['original']
        # 42 launches: 1..21 and 2..22 ms.
        self.assertEqual((42, 2, [11.0, 12.0]), (o['launches'], o['rounds'], o['round_medians_ms']))
        self.assertEqual((11.5, 1.0, 22.0), (o['median_ms'], o['min_ms'], o['max_ms']))
        self.assertAlmostEqual(6.25, o['p25_ms'])
        self.assertAlmostEqual(16.75, o['p75_ms'])
        self.assertAlmostEqual((16.75 - 6.25) / 11.5, o['spread'])
        self.assertEqual([4000.0, 4100.0], o['copy_gbps_measured'])
        self.assertEqual((32, 512, 0, 256, 8, 64), (o['regs'], o['smem_bytes'], o['local_bytes'],
                                                   o['threads_per_block'], o['blocks_per_sm'], o['warps_per_sm']))
        v = k1['variants']['v']
        self.assertEqual(('ok', 21, 1, 10.5), (v['status'], v['launches'], v['rounds'], v['median_ms']))
        self.assertAlmostEqual(11.5 / 10.5, v['speedup'])
        # The floor: 4 GB at the best 4100 GB/s; the compute-only variant cannot launch.
        self.assertEqual(4100.0, k1['copy_gbps'])
        self.assertEqual('cannot launch', k1['variants']['compute_only']['status'])
        self.assertEqual((None, 4 * 10**9 / (4100.0 * 1e9) * 1e3, 'memory'),
                         (k1['floors']['compute_only_ms'], k1['floors']['memory_ms'], k1['floors']['bound']))
        self.assertEqual(0, k1['variants']['compute_only']['warps_per_sm'])
        # The kernel whose outputs differ.
        self.assertEqual('differs', k2['variants']['v']['status'])
        self.assertEqual('ok', k2['variants']['original']['status'])
        self.assertEqual({'v': {'speedup': 11.5 / 10.5, 'kernels': 1}}, rec['geomean'])
        # It renders.
        md = br.markdown(rec)
        self.assertIn('| s: k2<1, 2> | huge | cannot launch |', md)
        self.assertIn('BUG: a rewrite that differs from its original or fails where it ran: s: k2<1, 2>, v', md)

    def test_a_kernel_that_never_ran(self):
        os.remove(os.path.join(self.raw, 's', 'v.r1.txt'))
        rec = br.record(self.bundle, self.raw)
        self.assertEqual('not run', rec['kernels'][0]['variants']['v']['status'])
        self.assertIsNone(rec['kernels'][0]['variants']['v']['speedup'])
        self.assertEqual({'speedup': None, 'kernels': 0}, rec['geomean']['v'])
        self.assertIn('geomean speedup, v: - over 0 kernel(s); 2 left out', br.markdown(rec))

    def test_a_variant_never_compared_is_no_result(self):
        os.remove(os.path.join(self.raw, 's', 'v.compare.json'))
        rec = br.record(self.bundle, self.raw)
        self.assertEqual(['not compared', 'not compared'], [k['variants']['v']['status'] for k in rec['kernels']])
        self.assertEqual('ok', rec['kernels'][0]['variants']['original']['status'])
        self.assertEqual(0, rec['geomean']['v']['kernels'])

    def test_a_case_not_compared_is_no_result(self):
        self.write('s/v.compare.json', json.dumps({'cases': [
            {'kernel': 'k', 'case': 'small', 'outputs': 'not run'},
            {'kernel': 'k', 'case': 'big "one"', 'outputs': 'bitwise equal'},
            {'kernel': 'k2<1, 2>', 'case': 'huge', 'outputs': 'bitwise equal'}], 'passed': False}))
        rec = br.record(self.bundle, self.raw)
        self.assertEqual(['not compared', 'ok'], [k['variants']['v']['status'] for k in rec['kernels']])

    def test_the_l2_floor(self):
        # The census: case 1's loops copy 66 GB into shared memory; case 2's census is missing.
        self.write('s/census.info.json', json.dumps({'device': {}, 'cases': [
            {'index': 1, 'kernel': 'k', 'case': 'big "one"', 'moved_bytes': 4 * 10**9, 'census_bytes': 66 * 10**9}]}))
        self.write('s/original.r1.txt', 'ran 0\n' + self.timed(1, 1.0) + 'l2_gbps 1 5000.0\n' +
                   self.timed(2, 10.0, 3000.0) + 'l2_gbps 2 5500.0\n')
        self.write('s/v.r1.txt', self.timed(1, 0.5) + 'l2_gbps 1 6000.0\n' + self.timed(2, 5.0))
        rec = br.record(self.bundle, self.raw)
        k1, k2 = rec['kernels']
        # 66 GB at the best 6000 GB/s: 11 ms, above the memory floor (4 GB at 4100 GB/s).
        self.assertEqual((66 * 10**9, 6000.0), (k1['census_bytes'], k1['l2_gbps']))
        self.assertAlmostEqual(11.0, k1['floors']['l2_ms'])
        self.assertEqual('l2', k1['floors']['bound'])
        self.assertAlmostEqual(11.0, k1['floors']['floor_ms'])
        self.assertIsNone(k2['floors']['l2_ms'])
        self.assertEqual('memory', k2['floors']['bound'])
        self.assertEqual(rec, br.derive(copy.deepcopy(rec)))
        md = br.markdown(rec)
        self.assertIn('| kernel | timed case | compute-only ms | memory floor ms | L2 floor ms | floor |', md)
        self.assertIn('| s: k | big "one" | cannot launch | 0.9756 | 11.0000 | l2 | 11.5000 | 1.05 |', md)
        # The variant runs at 10.5 ms, below the L2 floor: the record says so, naming it.
        self.assertIn('The floor is not a floor where a variant runs below it: s: k, v (0.95 of l2)\n', md)

    def test_the_memory_floor_takes_the_faster_of_copy_and_read(self):
        # Case 1 moves 4 GB: 1 ms at the copy's 4000 GB/s (4100 in round 2), 0.8 ms at the
        # 5000 GB/s of reading alone, measured beside the variant.
        self.write('s/v.r1.txt', self.timed(1, 0.5) + 'read_gbps 1 5000.0\n' + self.timed(2, 5.0))
        rec = br.record(self.bundle, self.raw)
        k1, k2 = rec['kernels']
        self.assertEqual((4100.0, 5000.0), (k1['copy_gbps'], k1['read_gbps']))
        self.assertAlmostEqual(0.8, k1['floors']['memory_ms'])
        # Case 2: no read measured, the copy's best bandwidth (4000 GB/s, the variant's) stands.
        self.assertIsNone(k2['read_gbps'])
        self.assertAlmostEqual(10**9 / (4000.0 * 1e9) * 1e3, k2['floors']['memory_ms'])
        self.assertEqual(rec, br.derive(copy.deepcopy(rec)))

    def test_a_record_within_its_floors_is_validated(self):
        self.write('s/census.info.json', json.dumps({'device': {}, 'cases': [
            {'index': 1, 'kernel': 'k', 'case': 'big "one"', 'census_bytes': 10**9},
            {'index': 2, 'kernel': 'k2<1, 2>', 'case': 'huge', 'census_bytes': 10**9}]}))
        self.write('s/original.r1.txt', 'ran 0\n' + self.timed(1, 1.0, 100.0) + 'l2_gbps 1 5000.0\n' +
                   self.timed(2, 10.0, 300.0) + 'l2_gbps 2 5500.0\n')
        self.write('s/original.r2.txt', '')
        self.write('s/v.r1.txt', self.timed(1, 0.5, 1000.0) + self.timed(2, 5.0, 1000.0))
        md = br.markdown(br.record(self.bundle, self.raw))
        self.assertIn("Validated: no variant (the original included) runs below its kernel's floor.", md)

    def test_command_line(self):
        import subprocess
        out = os.path.join(self.tmp.name, 'benchmark.json')
        with open(out, 'w') as f:
            subprocess.run([sys.executable, os.path.join(HERE, 'bench_report.py'), 'record', '--bundle',
                            self.bundle, '--raw', self.raw], stdout=f, check=True)
        md = subprocess.run([sys.executable, os.path.join(HERE, 'bench_report.py'), 'markdown', out],
                            stdout=subprocess.PIPE, check=True, universal_newlines=True).stdout
        self.assertIn('| s: k | big "one" |', md)


if __name__ == '__main__':
    unittest.main()
