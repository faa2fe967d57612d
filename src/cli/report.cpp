// `iron report`: one self-contained HTML file from snapshots and peer files — a roofline chart per
// device, a latency-vs-size chart per sweep, and a table of every result. Chart.js (Debian's
// libjs-chart.js) is inlined and the data is embedded, so the file opens offline, on the GPU
// machine or anywhere it is copied; the table is plain HTML and reads even without scripts.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "cli/bootstrap.hpp"

namespace iron::cli {

namespace {

using nlohmann::json;
namespace cmp = iron::cli::compare;

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Embedded inside <script>: no "<" may survive, or "</script>" in a kernel message would end
// the element. \u003c is the same character to the JSON parser.
std::string json_for_script(const json& j) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace), out;
  for (char c : s) out += c == '<' ? std::string("\\u003c") : std::string(1, c);
  return out;
}

std::string fmt(const char* f, double v) {
  if (!std::isfinite(v)) return "";
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

double median_or_nan(std::vector<double> v) { return v.empty() ? std::nan("") : cmp::median(std::move(v)); }

// One result with the figures the charts need, derived from the declared bytes and FLOPs when
// the record carries no metrics (peer files from older scripts).
struct Point {
  const json* r;
  std::string snap;
  double median_us, min_us, gbps, gflops, intensity;
};

Point make_point(const json& r, const std::string& snap) {
  Point p{&r, snap, cmp::median_of(r), cmp::min_of(r), cmp::metric_field(r, "gbps"), cmp::metric_field(r, "gflops"),
          cmp::metric_field(r, "intensity")};
  double bytes = cmp::num_field(r, "bytes"), flops = cmp::num_field(r, "flops");
  if (!std::isfinite(p.gbps) && bytes > 0 && p.median_us > 0) p.gbps = bytes / p.median_us / 1e3;
  if (!std::isfinite(p.gflops) && flops > 0 && p.median_us > 0) p.gflops = flops / p.median_us / 1e3;
  if (!std::isfinite(p.intensity) && bytes > 0 && flops > 0) p.intensity = flops / bytes;
  return p;
}

// What a colour stands for: the source, and the snapshot too when several are shown (two Iron
// snapshots must not share a colour).
std::string series_key(const Point& p, bool multi_snap) {
  return cmp::source_of(*p.r) + (multi_snap ? " @" + p.snap : "");
}

// Rates in the unit that reads best: 4.8 TB/s, 350 GB/s, 56.5 MB/s.
std::string rate(double giga, const char* unit) {
  if (giga >= 1000) return fmt("%.4g T", giga / 1000) + unit;
  if (giga >= 1) return fmt("%.4g G", giga) + unit;
  return fmt("%.4g M", giga * 1000) + unit;
}

// A device's ceilings, recovered from the percentages the runner recorded (value * 100 / pct),
// preferring the device-spec figures, then calibrated ones, then the best observed.
struct Roofs {
  double gbps = std::nan("");
  std::string gbps_from;
  std::map<std::string, double> gflops;  // by dtype, or "all" when only observed
  std::string gflops_from;
};

Roofs device_roofs(const std::vector<const Point*>& pts) {
  Roofs roofs;
  for (const char* kind : {"peak", "measured"}) {
    std::vector<double> bw;
    std::map<std::string, std::vector<double>> fl;
    for (const Point* p : pts) {
      double pb = cmp::metric_field(*p->r, (std::string("pct_") + kind + "_bw").c_str());
      double pc = cmp::metric_field(*p->r, (std::string("pct_") + kind + "_compute").c_str());
      if (pb > 0 && p->gbps > 0) bw.push_back(p->gbps * 100 / pb);
      if (pc > 0 && p->gflops > 0) fl[cmp::str_field(*p->r, "dtype")].push_back(p->gflops * 100 / pc);
    }
    const char* label = kind == std::string("peak") ? "device spec" : "calibrated";
    if (!std::isfinite(roofs.gbps) && !bw.empty()) roofs.gbps = median_or_nan(bw), roofs.gbps_from = label;
    if (roofs.gflops.empty() && !fl.empty()) {
      for (auto& [dt, v] : fl) roofs.gflops[dt] = median_or_nan(v);
      roofs.gflops_from = label;
    }
  }
  double max_bw = 0, max_fl = 0;
  for (const Point* p : pts) {
    if (p->gbps > max_bw) max_bw = p->gbps;
    if (p->gflops > max_fl) max_fl = p->gflops;
  }
  if (!std::isfinite(roofs.gbps) && max_bw > 0) roofs.gbps = max_bw, roofs.gbps_from = "max observed";
  if (roofs.gflops.empty() && max_fl > 0) roofs.gflops["all"] = max_fl, roofs.gflops_from = "max observed";
  return roofs;
}

json roofline_json(const std::string& device, const std::vector<const Point*>& pts, bool multi_snap) {
  Roofs roofs = device_roofs(pts);
  double xmin = INFINITY, xmax = 0;
  json datasets = json::object();  // by source
  for (const Point* p : pts) {
    if (!(p->intensity > 0) || !(p->gflops > 0)) continue;
    xmin = std::min(xmin, p->intensity);
    xmax = std::max(xmax, p->intensity);
    std::string src = series_key(*p, multi_snap);
    std::string label = cmp::case_name(*p->r) + " " + cmp::str_field(*p->r, "dtype") + " (" + src + ")";
    datasets[src].push_back({{"x", p->intensity}, {"y", p->gflops}, {"label", label}, {"dtype", cmp::str_field(*p->r, "dtype")}});
  }
  if (xmax == 0) return nullptr;
  xmin /= 4;
  xmax *= 4;
  json roof_lines = json::array();
  for (auto& [dt, peak] : roofs.gflops) {
    if (!(peak > 0)) continue;
    std::string label = (dt == "all" ? std::string("roof") : "roof " + dt) + ": " + rate(peak, "FLOP/s");
    json line = json::array();
    if (roofs.gbps > 0) {
      label += ", " + rate(roofs.gbps, "B/s");
      double ridge = peak / roofs.gbps;
      xmin = std::min(xmin, ridge / 4);
      xmax = std::max(xmax, ridge * 4);
      line.push_back({{"x", xmin}, {"y", roofs.gbps * xmin}});
      line.push_back({{"x", ridge}, {"y", peak}});
      line.push_back({{"x", xmax}, {"y", peak}});
    } else {
      line.push_back({{"x", xmin}, {"y", peak}});
      line.push_back({{"x", xmax}, {"y", peak}});
    }
    roof_lines.push_back({{"label", label + " (" + roofs.gflops_from + ")"}, {"data", line}});
  }
  if (roof_lines.empty() && roofs.gbps > 0)  // no FLOP figures anywhere: the bandwidth slope alone
    roof_lines.push_back({{"label", "memory: " + rate(roofs.gbps, "B/s") + " (" + roofs.gbps_from + ")"},
                          {"data", json::array({{{"x", xmin}, {"y", roofs.gbps * xmin}}, {{"x", xmax}, {"y", roofs.gbps * xmax}}})}});
  json points = json::array();
  for (auto& [src, data] : datasets.items()) points.push_back({{"source", src}, {"data", data}});
  return {{"device", device}, {"roofs", roof_lines}, {"points", points}, {"bw_from", roofs.gbps_from},
          {"compute_from", roofs.gflops_from}, {"gbps", cmp::nullable(roofs.gbps)}};
}

std::string table_html(const std::vector<Point>& pts, const std::map<std::string, Roofs>& roofs, bool multi_snap) {
  std::ostringstream h;
  h << "<table id=\"results\"><thead><tr>";
  if (multi_snap) h << "<th class=\"l\">snapshot</th>";
  for (const char* c : {"kernel/bench", "dtype", "backend", "device", "source", "status"}) h << "<th class=\"l\">" << c << "</th>";
  for (const char* c : {"median µs", "min µs", "p95 µs", "CV", "GB/s", "GFLOP/s", "FLOP/B", "% peak BW", "% peak compute"})
    h << "<th>" << c << "</th>";
  for (const char* c : {"bottleneck", "note"}) h << "<th class=\"l\">" << c << "</th>";
  h << "</tr></thead><tbody>\n";
  for (const Point& p : pts) {
    const json& r = *p.r;
    std::string note = cmp::str_field(r, "message");
    std::string dev = cmp::str_field(r, "device", "unknown device");
    auto it = roofs.find(dev);
    // §6.1: a figure above the device's bandwidth ceiling is a measurement bug, not a result.
    if (cmp::is_ok(r) && it != roofs.end() && it->second.gbps_from != "max observed" && p.gbps > it->second.gbps * 1.02)
      note = "ABOVE THE MEMORY ROOF: check the harness. " + note;
    h << "<tr>";
    if (multi_snap) h << "<td class=\"l\">" << html_escape(p.snap) << "</td>";
    h << "<td class=\"l\">" << html_escape(cmp::case_name(r)) << "</td><td class=\"l\">" << html_escape(cmp::str_field(r, "dtype"))
      << "</td><td class=\"l\">" << html_escape(cmp::str_field(r, "backend")) << "</td><td class=\"l\">" << html_escape(dev)
      << "</td><td class=\"l\">" << html_escape(cmp::source_of(r)) << "</td><td class=\"l\">"
      << html_escape(cmp::str_field(r, "status", "ok")) << "</td>";
    double p95 = cmp::stat_field(r, "p95_us"), cv = cmp::stat_field(r, "cv");
    for (const std::string& v :
         {fmt("%.3f", p.median_us), fmt("%.3f", p.min_us), fmt("%.3f", p95), fmt("%.3f", cv), fmt("%.1f", p.gbps),
          fmt("%.1f", p.gflops), fmt("%.3g", p.intensity), fmt("%.1f", cmp::metric_field(r, "pct_peak_bw")),
          fmt("%.1f", cmp::metric_field(r, "pct_peak_compute"))})
      h << "<td>" << v << "</td>";
    std::string bottleneck;
    if (auto m = r.find("metrics"); m != r.end() && m->is_object()) bottleneck = cmp::str_field(*m, "bottleneck");
    h << "<td class=\"l\">" << html_escape(bottleneck) << "</td><td class=\"l\">" << html_escape(note) << "</td></tr>\n";
  }
  h << "</tbody></table>\n";
  return h.str();
}

// The page's script: draws the charts from the embedded data. Fixed canvas sizes, no animation
// and a device pixel ratio of 1, so a headless screenshot is complete at load and reproducible.
constexpr const char* kRenderScript = R"JS(
(function () {
  const data = JSON.parse(document.getElementById('iron-data').textContent);
  const palette = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22'];
  const sourceColour = {};
  (data.sources || []).forEach((s, i) => { sourceColour[s] = palette[i % palette.length]; });
  const dtypeStyle = { f32: 'circle', f16: 'triangle', bf16: 'rect', f64: 'star', fp8: 'rectRot' };
  const dtypeDash = { f32: [], f16: [2, 3], bf16: [7, 4] };
  const common = {
    responsive: false, animation: false, devicePixelRatio: 1,
    plugins: {
      legend: { position: 'bottom', labels: { boxWidth: 12, font: { size: 11 } } },
      tooltip: { callbacks: { label: (ctx) => (ctx.raw.label ? ctx.raw.label + ': ' : '') + ctx.raw.x.toPrecision(4) + ', ' + ctx.raw.y.toPrecision(4) } }
    }
  };
  function panel(parent, title, note) {
    const box = document.createElement('div');
    box.className = 'chart';
    const h = document.createElement('h3');
    h.textContent = title;
    box.appendChild(h);
    if (note) { const p = document.createElement('p'); p.className = 'note'; p.textContent = note; box.appendChild(p); }
    const c = document.createElement('canvas');
    c.width = 560; c.height = 400;
    box.appendChild(c);
    parent.appendChild(box);
    return c;
  }
  // Log axes labelled at powers of ten (and at 2 and 5 when the axis spans few decades), with SI
  // suffixes (1k, 20M, ...).
  function si(v) {
    const units = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
    for (const [u, s] of units) if (v >= u) return +(v / u).toPrecision(3) + s;
    return String(+v.toPrecision(3));
  }
  function axis(title) {
    return { type: 'logarithmic', title: { display: true, text: title },
      ticks: { autoSkip: false, maxRotation: 0, callback: function (v) {
        const lead = Math.round(v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9)));
        const decades = Math.log10(this.max / this.min);
        return lead === 1 || (decades <= 3 && (lead === 2 || lead === 5)) ? si(v) : '';
      } } };
  }

  const roofDiv = document.getElementById('rooflines');
  data.rooflines.forEach((rl) => {
    const sets = [];
    rl.roofs.forEach((r, i) => sets.push({ label: r.label, data: r.data, showLine: true, pointRadius: 0, borderWidth: 2,
      borderColor: i === 0 ? '#333333' : '#888888', borderDash: i === 0 ? [] : [6, 4], backgroundColor: '#333333' }));
    rl.points.forEach((p) => sets.push({ label: p.source, data: p.data, pointRadius: 5,
      pointStyle: p.data.map((d) => dtypeStyle[d.dtype] || 'circle'),
      backgroundColor: sourceColour[p.source], borderColor: sourceColour[p.source] }));
    const note = 'ceilings: bandwidth from ' + (rl.bw_from || 'nothing') + ', compute from ' + (rl.compute_from || 'nothing') +
      '; marker: f32 circle, f16 triangle, bf16 square';
    new Chart(panel(roofDiv, 'Roofline: ' + rl.device, note), { type: 'scatter', data: { datasets: sets },
      options: Object.assign({}, common, { scales: { x: axis('arithmetic intensity (FLOP/byte)'), y: axis('GFLOP/s') } }) });
  });
  if (!data.rooflines.length) roofDiv.textContent = 'No result declares both bytes and FLOPs.';

  const sweepDiv = document.getElementById('sweeps');
  data.sweeps.forEach((sw) => {
    // Colour: the source, as on the rooflines. Marker and dash: the dtype.
    const sets = sw.series.map((s) => ({ label: s.label, data: s.data, showLine: true, borderWidth: 2, pointRadius: 4,
      pointStyle: dtypeStyle[s.dtype] || 'circle', borderColor: sourceColour[s.source], backgroundColor: sourceColour[s.source],
      borderDash: dtypeDash[s.dtype] || [] }));
    new Chart(panel(sweepDiv, 'Latency vs size: ' + sw.name, 'median latency; colour: source; f32 solid, f16 dotted, bf16 dashed'), { type: 'scatter', data: { datasets: sets },
      options: Object.assign({}, common, { scales: { x: axis('size'), y: axis('median latency (µs)') } }) });
  });
  if (!data.sweeps.length) sweepDiv.textContent = 'No result belongs to a sweep.';
  document.body.setAttribute('data-charts-drawn', String(data.rooflines.length + data.sweeps.length));
})();
)JS";

}  // namespace

std::string render_report(const std::vector<compare::Snapshot>& snaps, const std::string& chart_js, const std::string& title) {
  bool multi_snap = snaps.size() > 1;
  std::vector<Point> pts;
  for (const auto& s : snaps)
    for (const json& r : s.results) pts.push_back(make_point(r, s.name));
  std::stable_sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) {
    auto key = [](const Point& p) {
      return std::make_tuple(cmp::str_field(*p.r, "kernel"), cmp::str_field(*p.r, "bench"), cmp::str_field(*p.r, "dtype"),
                             cmp::source_of(*p.r) != "iron", cmp::source_of(*p.r));
    };
    return key(a) < key(b);
  });

  std::set<std::string> sources, devices;
  std::map<std::string, std::vector<const Point*>> by_device;
  for (const Point& p : pts) {
    if (!cmp::is_ok(*p.r) || !(p.median_us > 0)) continue;
    sources.insert(series_key(p, multi_snap));
    by_device[cmp::str_field(*p.r, "device", "unknown device")].push_back(&p);
  }
  // Iron first, so it gets the palette's first colours.
  std::vector<std::string> source_order;
  for (const auto& s : sources)
    if (s.rfind("iron", 0) == 0) source_order.push_back(s);
  for (const auto& s : sources)
    if (s.rfind("iron", 0) != 0) source_order.push_back(s);

  json data{{"sources", source_order}, {"rooflines", json::array()}, {"sweeps", json::array()}};
  std::map<std::string, Roofs> roofs;
  for (auto& [dev, dpts] : by_device) {
    roofs[dev] = device_roofs(dpts);
    json rl = roofline_json(dev, dpts, multi_snap);
    if (!rl.is_null()) data["rooflines"].push_back(rl);
  }

  // Sweeps: one line per dtype and source (and snapshot and device when there are several).
  std::map<std::string, std::map<std::string, json>> sweeps;
  for (auto& [dev, dpts] : by_device) {
    for (const Point* p : dpts) {
      std::string sweep = cmp::str_field(*p->r, "sweep");
      double size = cmp::num_field(*p->r, "size");
      if (sweep.empty() || !(size > 0)) continue;
      std::string dtype = cmp::str_field(*p->r, "dtype"), src = series_key(*p, multi_snap);
      std::string label = dtype + " " + src + (by_device.size() > 1 ? " " + dev : "");
      json& series = sweeps[sweep][label];
      if (series.is_null()) series = {{"label", label}, {"dtype", dtype}, {"source", src}, {"data", json::array()}};
      series["data"].push_back({{"x", size}, {"y", p->median_us}, {"label", cmp::case_name(*p->r)}});
    }
  }
  for (auto& [name, series_map] : sweeps) {
    json series = json::array();
    for (auto& [label, s] : series_map) {
      std::vector<json> d = s["data"].get<std::vector<json>>();
      std::sort(d.begin(), d.end(), [](const json& a, const json& b) { return a["x"].get<double>() < b["x"].get<double>(); });
      s["data"] = d;
      series.push_back(s);
    }
    data["sweeps"].push_back({{"name", name}, {"series", series}});
  }

  std::string js = chart_js;
  for (size_t p = js.find("</script"); p != std::string::npos; p = js.find("</script", p)) js.replace(p, 2, "<\\/");

  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" << html_escape(title) << "</title>\n"
    << "<style>\n"
       "body { font-family: sans-serif; background: #ffffff; color: #222222; margin: 16px; }\n"
       "h1 { font-size: 20px; margin: 0 0 4px 0; } h2 { font-size: 16px; margin: 16px 0 6px 0; } h3 { font-size: 13px; margin: 0; }\n"
       ".grid { display: flex; flex-wrap: wrap; gap: 16px; } .chart { width: 560px; }\n"
       ".note, .meta { font-size: 11px; color: #555555; margin: 2px 0 4px 0; }\n"
       "table { border-collapse: collapse; font-size: 11px; } th, td { border: 1px solid #cccccc; padding: 2px 5px; text-align: right; }\n"
       "th { background: #eeeeee; } td.l, th.l { text-align: left; }\n"
       "</style>\n<script>\n"
    << js << "\n</script>\n</head><body>\n<h1>" << html_escape(title) << "</h1>\n<p class=\"meta\">";
  for (size_t i = 0; i < snaps.size(); ++i)
    h << (i ? "; " : "") << html_escape(snaps[i].name) << " (" << html_escape(snaps[i].created) << ", "
      << snaps[i].results.size() << " results)";
  h << "</p>\n<h2>Roofline</h2>\n<div class=\"grid\" id=\"rooflines\"></div>\n"
    << "<h2>Latency vs size</h2>\n<div class=\"grid\" id=\"sweeps\"></div>\n<h2>Results</h2>\n"
    << table_html(pts, roofs, multi_snap) << "<script id=\"iron-data\" type=\"application/json\">" << json_for_script(data)
    << "</script>\n<script>" << kRenderScript << "</script>\n</body></html>\n";
  return h.str();
}

}  // namespace iron::cli
