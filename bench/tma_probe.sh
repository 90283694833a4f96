#!/usr/bin/env bash
# Which ncu counters see the Triton kernel's TMA loads: the metric list, then two profiles of one forward launch.
set -u
P=bench/tma_probe.py
ncu --query-metrics --chip gh100 > $OUT/ncu_metrics_gh100.txt 2>&1
grep -iE "tma|bulk|async" $OUT/ncu_metrics_gh100.txt | head -80
SAFE=gpu__time_duration.sum,l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_bytes.sum,dram__bytes_read.sum,dram__bytes_write.sum,l1tex__m_xbar2l1tex_read_bytes.sum,l1tex__m_l1tex2xbar_write_bytes.sum
timeout 120 ncu --clock-control none --kernel-name regex:fa2_fwd --launch-count 1 --metrics $SAFE --csv --print-units base python3 $P > $OUT/tma_safe.csv 2>&1; echo "safe rc=$?"
grep -E '"(gpu__|l1tex__|lts__|dram__)' $OUT/tma_safe.csv | cut -d, -f12- | head -20
FOUND=$(grep -iE "tma|bulk" $OUT/ncu_metrics_gh100.txt | awk '$2=="Counter"{print $1".sum"}' | sort -u | head -40 | paste -sd, -)
echo "discovered: $FOUND"
if [ -n "$FOUND" ]; then
  timeout 150 ncu --clock-control none --kernel-name regex:fa2_fwd --launch-count 1 --metrics "$FOUND" --csv --print-units base python3 $P > $OUT/tma_found.csv 2>&1; echo "found rc=$?"
  grep -E '^"' $OUT/tma_found.csv | cut -d, -f12- | head -50
fi
