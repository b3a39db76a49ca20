"""A compiled stand-in for Hudi's ``HoodieCompactor``, for tests that run the real spark-submit.

No Hudi bundle jar can be obtained here, so this compiles a main class named
``org.apache.hudi.utilities.HoodieCompactor`` into a jar named like the slim utilities bundle
(and an empty "Spark bundle" of the same release). The stand-in

- refuses any flag the real compactor's ``Config`` does not declare (exit 2);
- reads the ``--props`` file as Hudi's ``DFSPropertiesConfiguration`` does, through Hadoop's
  ``FileSystem.open`` on its ``file://`` URI (Spark's own Hadoop client, so a named pipe is
  read exactly as the real utility would read it), refusing a line that is not ``key=value``
  (exit 3), and applies ``--hoodie-conf`` over it, as Hudi does; it says whether that path
  was a regular file on disk (``stand-in props kind ...``);
- appends what it received (``argv ...`` and ``props ...`` lines) to ``<base path>.received``,
  so the test can check the command line and the properties exactly;
- deletes each path listed in ``<base path>.fence-probe``, if there is one, through the Hadoop
  file system the job's conf names (``spark.hadoop.*``, as Spark builds it), as Hudi's cleaner
  would delete what a hostile metadata table lists, and logs ``stand-in fence <class> <path>
  deleted|refused: ...``;
- then behaves like the compactor on the table's timeline (table version 6 in ``.hoodie/``,
  8 and later in ``.hoodie/timeline/``): ``scheduleAndExecute`` counts the delta commits after
  the last completed ``commit`` (of every state on version 6, completed ones on 1.x) against
  ``hoodie.compact.inline.max.delta.commits`` (Hudi's default of 5 when TMS passed none,
  NUM_COMMITS only) and ``LogFileSizeBasedCompactionStrategy``'s log-size threshold when
  ``--strategy`` names it, and either logs "Couldn't do schedule" and exits 255, or writes a
  compaction instant (requested, inflight, completed ``commit``, its metadata copied from the
  newest delta commit so readers still find the schema) and logs "Finish job";
  ``execute --instant-time T`` completes the pending plan T, or logs "There is no scheduled
  compaction in the table" and exits 255 when there is none.

What it cannot show: Hudi's own plan (which file slices a compaction merges) and its writes.
"""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

RELEASE = "1.0.2"
STAND_IN = r"""
package org.apache.hudi.utilities;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.text.SimpleDateFormat;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TimeZone;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

public class HoodieCompactor {
  static final Set<String> FLAGS = Set.of("--base-path", "-sp", "--table-name", "-tn",
      "--instant-time", "-it", "--parallelism", "-pl", "--schema-file", "-sf",
      "--spark-master", "-ms", "--spark-memory", "-sm", "--retry", "-rt", "--schedule", "-sc",
      "--mode", "-m", "--strategy", "-st", "--props", "--hoodie-conf");
  static final Pattern INSTANT = Pattern.compile("([0-9]{14,20})(_[0-9]{14,20})?\\.([a-z]+)"
      + "(\\.(requested|inflight))?");

  static Path path(String pathOrUri) throws Exception {
    return pathOrUri.startsWith("file:") ? Paths.get(new URI(pathOrUri)) : Paths.get(pathOrUri);
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> flags = new TreeMap<>();
    List<String> confs = new ArrayList<>();
    for (int i = 0; i < args.length; i += 2) {
      if (!FLAGS.contains(args[i]) || i + 1 >= args.length) {
        System.out.println("stand-in: unknown flag " + args[i]);
        System.exit(2);
      }
      if (args[i].equals("--hoodie-conf")) confs.add(args[i + 1]);
      else flags.put(args[i], args[i + 1]);
    }
    String base = flags.get("--base-path");
    List<String> record = new ArrayList<>();
    record.add("argv " + String.join(" ", args));
    Map<String, String> props = new TreeMap<>();
    if (flags.containsKey("--props")) {
      String uri = flags.get("--props");
      System.out.println("stand-in props kind "
          + (Files.isRegularFile(path(uri)) ? "regular-file" : "not-a-file"));
      org.apache.hadoop.fs.Path hp = new org.apache.hadoop.fs.Path(uri);
      org.apache.hadoop.fs.FileSystem fs =
          hp.getFileSystem(new org.apache.hadoop.conf.Configuration());
      List<String> lines = new ArrayList<>();
      try (java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(
          fs.open(hp), StandardCharsets.UTF_8))) {
        r.lines().forEach(lines::add);
      }
      for (String line : lines) {
        String[] kv = line.split("=", 2);
        if (kv.length != 2 || !kv[0].startsWith("hoodie.")) {
          System.out.println("stand-in: bad properties line");
          System.exit(3);
        }
        props.put(kv[0], kv[1]);
        record.add("props " + line);
        System.out.println("stand-in prop " + kv[0]);
      }
    }
    for (String conf : confs) {
      String[] kv = conf.split("=", 2);
      props.put(kv[0], kv[1]);
      System.out.println("stand-in conf " + conf);
    }
    Files.write(Paths.get(path(base) + ".received"), record, StandardCharsets.UTF_8,
        StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    Path probe = Paths.get(path(base) + ".fence-probe");
    if (Files.isRegularFile(probe)) {  // delete what a hostile metadata table would name
      org.apache.hadoop.conf.Configuration sparkConf = new org.apache.hadoop.conf.Configuration();
      for (String key : System.getProperties().stringPropertyNames()) {
        if (key.startsWith("spark.hadoop.")) {  // as Spark builds a job's Hadoop conf
          sparkConf.set(key.substring("spark.hadoop.".length()), System.getProperty(key));
        }
      }
      for (String victim : Files.readAllLines(probe, StandardCharsets.UTF_8)) {
        org.apache.hadoop.fs.Path vp = new org.apache.hadoop.fs.Path(victim);
        org.apache.hadoop.fs.FileSystem vfs = vp.getFileSystem(sparkConf);
        String outcome;
        try {
          outcome = vfs.delete(vp, false) ? "deleted" : "not deleted";
        } catch (java.io.IOException e) {
          outcome = "refused: " + e.getMessage();
        }
        System.out.println("stand-in fence " + vfs.getClass().getName() + " " + victim + " "
            + outcome);
      }
    }

    Path hoodie = path(base).resolve(".hoodie");
    Path timeline = Files.isDirectory(hoodie.resolve("timeline"))
        ? hoodie.resolve("timeline") : hoodie;
    boolean v1 = timeline != hoodie;
    TreeSet<String> deltas = new TreeSet<>();
    TreeSet<String> commits = new TreeSet<>();
    TreeSet<String> requested = new TreeSet<>();
    Path newestDelta = null;
    try (Stream<Path> files = Files.list(timeline)) {
      for (Path f : (Iterable<Path>) files.sorted()::iterator) {
        Matcher m = INSTANT.matcher(f.getFileName().toString());
        if (!m.matches()) continue;
        boolean done = m.group(4) == null;
        if (m.group(3).equals("deltacommit")) {
          if (done || !v1) deltas.add(m.group(1));  // Hudi 1.x counts completed ones only
          if (done) newestDelta = f;
        }
        if (m.group(3).equals("commit") && done) commits.add(m.group(1));
        if (m.group(3).equals("compaction") && "requested".equals(m.group(5)))
          requested.add(m.group(1));
      }
    }
    requested.removeAll(commits);
    String mode = flags.getOrDefault("--mode", "scheduleAndExecute");
    String instant;
    if (mode.equalsIgnoreCase("execute")) {
      instant = flags.get("--instant-time");
      if (instant == null || !requested.contains(instant)) {
        System.out.println("WARN HoodieCompactor: There is no scheduled compaction in the table.");
        System.exit(-1);
      }
    } else {
      String strategy = props.getOrDefault("hoodie.compact.inline.trigger.strategy",
          "NUM_COMMITS");
      if (!strategy.equals("NUM_COMMITS")) {
        System.out.println("stand-in: only NUM_COMMITS is imitated, got " + strategy);
        System.exit(4);
      }
      int max = Integer.parseInt(props.getOrDefault(
          "hoodie.compact.inline.max.delta.commits", "5"));
      String last = commits.isEmpty() ? "" : commits.last();
      long count = deltas.stream().filter(t -> t.compareTo(last) > 0).count();
      if (count < max) {
        System.out.println("stand-in: " + count + " delta commits since the last compaction, "
            + "below " + max);
        System.out.println("WARN HoodieCompactor: Couldn't do schedule");
        System.exit(-1);
      }
      // LogFileSizeBasedCompactionStrategy keeps file groups whose log files reach the
      // threshold: none does -> an empty plan, which Hudi does not schedule
      long threshold = Long.parseLong(props.getOrDefault(
          "hoodie.compaction.logfile.size.threshold", "0"));
      if (flags.getOrDefault("--strategy", "").endsWith(".LogFileSizeBasedCompactionStrategy")
          && threshold > 0) {
        Map<String, Long> logBytes = new TreeMap<>();
        try (Stream<Path> all = Files.walk(path(base))) {
          for (Path f : (Iterable<Path>) all::iterator) {
            String name = f.getFileName().toString();
            if (f.startsWith(hoodie) || !name.startsWith(".") || !name.contains(".log.")) continue;
            logBytes.merge(name.substring(1).split("_")[0], Files.size(f), Long::sum);
          }
        }
        if (logBytes.values().stream().noneMatch(n -> n >= threshold)) {
          System.out.println("stand-in: no file group has " + threshold + " bytes of logs");
          System.out.println("WARN HoodieCompactor: Couldn't do schedule");
          System.exit(-1);
        }
      }
      SimpleDateFormat fmt = new SimpleDateFormat("yyyyMMddHHmmssSSS");
      fmt.setTimeZone(TimeZone.getTimeZone("UTC"));
      instant = fmt.format(new Date());
      Files.write(timeline.resolve(instant + ".compaction.requested"), new byte[0]);
    }
    Files.write(timeline.resolve(instant + ".compaction.inflight"), new byte[0]);
    SimpleDateFormat fmt = new SimpleDateFormat("yyyyMMddHHmmssSSS");
    fmt.setTimeZone(TimeZone.getTimeZone("UTC"));
    String done = v1 ? instant + "_" + fmt.format(new Date()) + ".commit" : instant + ".commit";
    byte[] meta = newestDelta == null ? new byte[0] : Files.readAllBytes(newestDelta);
    Files.write(timeline.resolve(done), meta);
    System.out.println("INFO UtilHelpers: Finish job with " + instant + " instant time.");
  }
}
"""


def compile_stand_in(root: Path) -> tuple[str, str]:
    """(the utilities jar, the Spark bundle) under ``root``, both named as release
    ``RELEASE``."""
    javac = shutil.which("javac")
    if javac is None:
        raise AssertionError("javac is needed (scripts/setup installs Java 17 with javac)")
    src = root / "src" / "org" / "apache" / "hudi" / "utilities"
    src.mkdir(parents=True)
    (src / "HoodieCompactor.java").write_text(STAND_IN)
    import pyspark

    hadoop = sorted(Path(pyspark.__file__).parent.joinpath("jars").glob("hadoop-client-api-*"))
    if not hadoop:
        raise AssertionError("pyspark's hadoop-client-api jar is missing")
    subprocess.run([javac, "--release", "11", "-cp", str(hadoop[-1]), "-d",
                    str(root / "classes"), str(src / "HoodieCompactor.java")], check=True)
    utilities = root / f"hudi-utilities-slim-bundle_2.12-{RELEASE}.jar"
    with zipfile.ZipFile(utilities, "w") as zf:
        for cls in (root / "classes").rglob("*.class"):
            zf.write(cls, cls.relative_to(root / "classes").as_posix())
    bundle = root / f"hudi-spark3.5-bundle_2.12-{RELEASE}.jar"
    with zipfile.ZipFile(bundle, "w") as zf:
        zf.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    return str(utilities), str(bundle)


def received(base: Path) -> list[tuple[list[str], dict[str, str]]]:
    """Every run the stand-in recorded for the table at ``base``: (argv, properties file)."""
    runs: list[tuple[list[str], dict[str, str]]] = []
    path = Path(f"{base}.received")
    for line in path.read_text().splitlines() if path.exists() else ():
        kind, _, rest = line.partition(" ")
        if kind == "argv":
            runs.append((rest.split(" "), {}))
        else:
            key, _, value = rest.partition("=")
            runs[-1][1][key] = value
    return runs
