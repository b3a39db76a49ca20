package tms.reporter;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;
import org.apache.iceberg.metrics.MetricsReport;
import org.apache.iceberg.metrics.MetricsReporter;
import org.apache.iceberg.rest.requests.ReportMetricsRequest;
import org.apache.iceberg.rest.requests.ReportMetricsRequestParser;

/**
 * An Iceberg {@link MetricsReporter} that sends every scan and commit report of a catalog to
 * TMS's report intake, so that TMS learns how the catalog's tables are read and written.
 *
 * <p>Set on a catalog with {@code metrics-reporter-impl=tms.reporter.TmsMetricsReporter} and
 * the {@code tms.reporter.*} properties below. It never slows or fails the query or commit it
 * reports on: {@link #report} serialises the report (Iceberg's own REST JSON form) and offers
 * it to a bounded queue, dropping it (and counting the drop) when the queue is full; one
 * daemon thread sends batches over HTTP and drops a batch TMS does not accept in time. Reports
 * still queued when the JVM exits are flushed for at most the send timeout.
 *
 * <p>The token is read from a file or an environment variable, never from a property value,
 * so it appears in no Spark UI, event log or catalog listing.
 */
public final class TmsMetricsReporter implements MetricsReporter {
  public static final String URL = "tms.reporter.url";
  public static final String CATALOG = "tms.reporter.catalog";
  public static final String TOKEN_FILE = "tms.reporter.token-file";
  public static final String TOKEN_ENV = "tms.reporter.token-env";
  public static final String CA_FILE = "tms.reporter.ca-file";
  public static final String QUEUE_CAPACITY = "tms.reporter.queue-capacity";
  public static final String BATCH_SIZE = "tms.reporter.batch-size";
  public static final String FLUSH_INTERVAL_MS = "tms.reporter.flush-interval-ms";
  public static final String TIMEOUT_MS = "tms.reporter.timeout-ms";

  static final int DEFAULT_QUEUE_CAPACITY = 10_000;
  static final int DEFAULT_BATCH_SIZE = 200;
  static final long DEFAULT_FLUSH_INTERVAL_MS = 1_000;
  static final long DEFAULT_TIMEOUT_MS = 2_000;
  static final int MAX_REPORT_CHARS = 256 * 1024;
  static final String REPORTS_PATH = "/v1/reports";

  // Process-wide counters (every reporter instance of this JVM), read by tests and logged at
  // close: how many reports were queued, sent and accepted, and dropped (queue full, report too
  // large, or TMS away or refusing).
  static final AtomicLong QUEUED = new AtomicLong();
  static final AtomicLong SENT = new AtomicLong();
  static final AtomicLong DROPPED = new AtomicLong();

  private BlockingQueue<String> queue;
  private Sender sender;
  private volatile boolean closed;

  /** Public no-argument constructor: Iceberg instantiates reporters by class name. */
  public TmsMetricsReporter() {}

  public static long queuedCount() {
    return QUEUED.get();
  }

  public static long sentCount() {
    return SENT.get();
  }

  public static long droppedCount() {
    return DROPPED.get();
  }

  @Override
  public void initialize(Map<String, String> properties) {
    String url = required(properties, URL);
    String catalog = required(properties, CATALOG);
    if (!url.startsWith("http://") && !url.startsWith("https://")) {
      throw new IllegalArgumentException(URL + " must start with http:// or https://");
    }
    int capacity = positiveInt(properties, QUEUE_CAPACITY, DEFAULT_QUEUE_CAPACITY);
    int batch = positiveInt(properties, BATCH_SIZE, DEFAULT_BATCH_SIZE);
    long flushMs = positiveInt(properties, FLUSH_INTERVAL_MS, (int) DEFAULT_FLUSH_INTERVAL_MS);
    long timeoutMs = positiveInt(properties, TIMEOUT_MS, (int) DEFAULT_TIMEOUT_MS);
    String token = token(properties);
    String ca = properties.get(CA_FILE);
    SSLSocketFactory tls = ca != null && !ca.isEmpty() ? trusting(ca).getSocketFactory() : null;
    URL target;
    try {
      target = new URL(stripSlash(url) + REPORTS_PATH);
    } catch (java.net.MalformedURLException e) {
      throw new IllegalArgumentException(URL + " is not a URL: " + e.getMessage());
    }
    queue = new ArrayBlockingQueue<>(capacity);
    sender =
        new Sender(
            tls,
            target,
            catalog,
            token,
            batch,
            flushMs,
            timeoutMs,
            queue);
    sender.start();
    Runtime.getRuntime().addShutdownHook(new Thread(sender::drainAtExit, "tms-reporter-exit"));
  }

  @Override
  public void report(MetricsReport report) {
    if (closed || queue == null || report == null) {
      return;
    }
    String json;
    try {
      json = ReportMetricsRequestParser.toJson(ReportMetricsRequest.of(report));
    } catch (RuntimeException e) {
      DROPPED.incrementAndGet();
      return;
    }
    if (json.length() > MAX_REPORT_CHARS || !queue.offer(json)) {
      DROPPED.incrementAndGet();
      return;
    }
    QUEUED.incrementAndGet();
  }

  @Override
  public void close() {
    closed = true;
    if (sender != null) {
      sender.shutdown();
    }
  }

  private static String required(Map<String, String> props, String key) {
    String value = props.get(key);
    if (value == null || value.trim().isEmpty()) {
      throw new IllegalArgumentException("TmsMetricsReporter needs the catalog property " + key);
    }
    return value.trim();
  }

  private static int positiveInt(Map<String, String> props, String key, int fallback) {
    String raw = props.get(key);
    if (raw == null || raw.isEmpty()) {
      return fallback;
    }
    try {
      int v = Integer.parseInt(raw.trim());
      if (v > 0) {
        return v;
      }
    } catch (NumberFormatException e) {
      // fall through to the error below
    }
    throw new IllegalArgumentException(key + " must be a positive integer, got " + raw);
  }

  private static String token(Map<String, String> props) {
    String file = props.get(TOKEN_FILE);
    String env = props.get(TOKEN_ENV);
    try {
      if (file != null && !file.isEmpty()) {
        return new String(Files.readAllBytes(Paths.get(file)), StandardCharsets.UTF_8).trim();
      }
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read " + TOKEN_FILE + ": " + e.getMessage());
    }
    if (env != null && !env.isEmpty()) {
      String value = System.getenv(env);
      if (value == null || value.isEmpty()) {
        throw new IllegalArgumentException(TOKEN_ENV + " names " + env + ", which is not set");
      }
      return value.trim();
    }
    return null; // a TMS without authentication (local development)
  }

  private static SSLContext trusting(String pemFile) {
    try {
      CertificateFactory cf = CertificateFactory.getInstance("X.509");
      KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
      store.load(null, null);
      int i = 0;
      try (java.io.InputStream in = Files.newInputStream(Paths.get(pemFile))) {
        Collection<? extends Certificate> certs = cf.generateCertificates(in);
        for (Certificate c : certs) {
          store.setCertificateEntry("tms-ca-" + i++, c);
        }
      }
      TrustManagerFactory tmf =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(store);
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(null, tmf.getTrustManagers(), null);
      return ctx;
    } catch (Exception e) {
      throw new IllegalArgumentException("cannot load " + CA_FILE + ": " + e.getMessage());
    }
  }

  private static String stripSlash(String url) {
    return url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
  }

  /** The background sender: batches of queued reports, one HTTP request each. */
  static final class Sender extends Thread {
    private final SSLSocketFactory tls;
    private final URL url;
    private final String catalog;
    private final String token;
    private final int batchSize;
    private final long flushMs;
    private final long timeoutMs;
    private final BlockingQueue<String> queue;
    private volatile boolean stopping;

    Sender(
        SSLSocketFactory tls,
        URL url,
        String catalog,
        String token,
        int batchSize,
        long flushMs,
        long timeoutMs,
        BlockingQueue<String> queue) {
      super("tms-reporter");
      setDaemon(true);
      this.tls = tls;
      this.url = url;
      this.catalog = catalog;
      this.token = token;
      this.batchSize = batchSize;
      this.flushMs = flushMs;
      this.timeoutMs = timeoutMs;
      this.queue = queue;
    }

    @Override
    public void run() {
      List<String> batch = new ArrayList<>(batchSize);
      while (!stopping || !queue.isEmpty()) {
        try {
          String first = queue.poll(flushMs, TimeUnit.MILLISECONDS);
          if (first == null) {
            continue;
          }
          batch.add(first);
          queue.drainTo(batch, batchSize - 1);
          send(batch);
        } catch (InterruptedException e) {
          stopping = true;
        } finally {
          batch.clear();
        }
      }
    }

    void shutdown() {
      stopping = true;
      interrupt();
      try {
        join(timeoutMs * 2);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      drainAtExit();
    }

    void drainAtExit() {
      stopping = true;
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
      List<String> batch = new ArrayList<>(batchSize);
      while (!queue.isEmpty() && System.nanoTime() < deadline) {
        queue.drainTo(batch, batchSize);
        send(batch);
        batch.clear();
      }
      DROPPED.addAndGet(queue.size());
      queue.clear();
    }

    private void send(List<String> batch) {
      if (batch.isEmpty()) {
        return;
      }
      StringBuilder body = new StringBuilder(64 + batch.size() * 512);
      body.append("{\"catalog\":").append(quote(catalog)).append(",\"reports\":[");
      for (int i = 0; i < batch.size(); i++) {
        if (i > 0) {
          body.append(',');
        }
        body.append(batch.get(i));
      }
      body.append("]}");
      byte[] bytes = body.toString().getBytes(StandardCharsets.UTF_8);
      HttpURLConnection conn = null;
      try {
        conn = (HttpURLConnection) url.openConnection();
        if (tls != null && conn instanceof HttpsURLConnection) {
          ((HttpsURLConnection) conn).setSSLSocketFactory(tls);
        }
        conn.setConnectTimeout((int) timeoutMs);
        conn.setReadTimeout((int) timeoutMs);
        conn.setRequestMethod("POST");
        conn.setDoOutput(true);
        conn.setFixedLengthStreamingMode(bytes.length);
        conn.setRequestProperty("Content-Type", "application/json");
        if (token != null) {
          conn.setRequestProperty("Authorization", "Bearer " + token);
        }
        try (OutputStream out = conn.getOutputStream()) {
          out.write(bytes);
        }
        int status = conn.getResponseCode();
        drain(status / 100 == 2 ? conn.getInputStream() : conn.getErrorStream());
        if (status / 100 == 2) {
          SENT.addAndGet(batch.size());
        } else {
          DROPPED.addAndGet(batch.size());
        }
      } catch (IOException | RuntimeException e) {
        DROPPED.addAndGet(batch.size());
      } finally {
        if (conn != null) {
          conn.disconnect();
        }
      }
    }

    private static void drain(InputStream in) throws IOException {
      if (in == null) {
        return;
      }
      try (InputStream body = in) {
        byte[] buf = new byte[1024];
        while (body.read(buf) >= 0) {
          // discard: the status says all the reporter needs
        }
      }
    }

    static String quote(String s) {
      StringBuilder out = new StringBuilder(s.length() + 2).append('"');
      for (char c : s.toCharArray()) {
        if (c == '"' || c == '\\') {
          out.append('\\').append(c);
        } else if (c < 0x20) {
          out.append(String.format("\\u%04x", (int) c));
        } else {
          out.append(c);
        }
      }
      return out.append('"').toString();
    }
  }
}
