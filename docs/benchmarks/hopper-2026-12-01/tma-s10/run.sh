# The tensor-map conformance cases on the H200, each in its own process (a fault poisons the
# context), then the Tma unit tests.
source .gpu-mb/setup.sh main
cd $B
mkdir -p /tmp/res
iron device > /tmp/res/device.txt 2>&1
for c in $(iron conformance --backend interp -f conformance.tma_ --verbose 2>&1 | grep -o 'conformance\.tma_[a-z0-9_.]*' | sort -u); do
  echo "== $c" >> /tmp/res/cases.txt
  timeout 60 iron conformance --backend cuda -f "$c" --verbose >> /tmp/res/cases.txt 2>&1
  echo "rc=$?" >> /tmp/res/cases.txt
done
timeout 120 bin/iron_unit_tests --gtest_filter='Tma*:TensorMaps*:MbarrierDevice*' > /tmp/res/unit.txt 2>&1; echo "rc=$?" >> /tmp/res/unit.txt
tar czf $OUT/run.tgz -C /tmp/res .
grep -c "^== " /tmp/res/cases.txt; grep -B1 -A3 -i "fail\|error\|rc=[1-9]" /tmp/res/cases.txt | head -60; tail -5 /tmp/res/unit.txt
