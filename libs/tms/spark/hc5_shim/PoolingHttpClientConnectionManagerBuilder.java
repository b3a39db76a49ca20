/*
 * TMS compatibility shim, compiled by tms.spark.provision into the relocated httpclient5 jar.
 *
 * httpclient5 5.2's builder is relocated to PoolingHttpClientConnectionManagerBuilder52 (its
 * setters are final, so it cannot be extended); this class keeps the original name and API,
 * delegates every call, and adds setTlsSocketStrategy (httpclient5 5.4), which Iceberg 1.10's
 * REST HTTPClient calls on every client it builds. The strategy Iceberg passes is 5.2's
 * DefaultClientTlsStrategy; its SSL context, protocols, cipher suites and hostname verifier are
 * read back and handed to 5.2's blocking-I/O equivalent, SSLConnectionSocketFactory.
 */
package org.apache.iceberg.shaded.org.apache.hc.client5.http.impl.io;

import java.lang.reflect.Field;
import javax.net.ssl.HostnameVerifier;
import javax.net.ssl.SSLContext;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.DnsResolver;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.HttpRoute;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.SchemePortResolver;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.config.ConnectionConfig;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.config.TlsConfig;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.io.ManagedHttpClientConnection;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.socket.LayeredConnectionSocketFactory;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.ssl.HttpsSupport;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.ssl.SSLConnectionSocketFactory;
import org.apache.iceberg.shaded.org.apache.hc.client5.http.ssl.TlsSocketStrategy;
import org.apache.iceberg.shaded.org.apache.hc.core5.function.Resolver;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.HttpHost;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.io.HttpConnectionFactory;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.io.SocketConfig;
import org.apache.iceberg.shaded.org.apache.hc.core5.pool.PoolConcurrencyPolicy;
import org.apache.iceberg.shaded.org.apache.hc.core5.pool.PoolReusePolicy;
import org.apache.iceberg.shaded.org.apache.hc.core5.util.TimeValue;

public class PoolingHttpClientConnectionManagerBuilder {
  private final PoolingHttpClientConnectionManagerBuilder52 delegate =
      PoolingHttpClientConnectionManagerBuilder52.create();

  public static PoolingHttpClientConnectionManagerBuilder create() {
    return new PoolingHttpClientConnectionManagerBuilder();
  }

  PoolingHttpClientConnectionManagerBuilder() {}

  /** httpclient5 5.4's TLS hook, mapped onto 5.2's SSL socket factory. */
  public PoolingHttpClientConnectionManagerBuilder setTlsSocketStrategy(
      TlsSocketStrategy strategy) {
    if (strategy == null) {
      delegate.setSSLSocketFactory(null);
      return this;
    }
    Object tls = strategy;  // at run time: 5.2's DefaultClientTlsStrategy, which Iceberg passes
    SSLContext context = (SSLContext) field(tls, "sslContext");
    String[] protocols = (String[]) field(tls, "supportedProtocols");
    String[] ciphers = (String[]) field(tls, "supportedCipherSuites");
    HostnameVerifier verifier = (HostnameVerifier) field(tls, "hostnameVerifier");
    if (verifier == null) {
      verifier = HttpsSupport.getDefaultHostnameVerifier();
    }
    delegate.setSSLSocketFactory(
        new SSLConnectionSocketFactory(context, protocols, ciphers, verifier));
    return this;
  }

  private static Object field(Object target, String name) {
    for (Class<?> k = target.getClass(); k != null; k = k.getSuperclass()) {
      try {
        Field f = k.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(target);
      } catch (NoSuchFieldException e) {
        // look in the superclass
      } catch (IllegalAccessException e) {
        throw new IllegalStateException("TMS httpclient5 shim: cannot read " + name, e);
      }
    }
    throw new UnsupportedOperationException("TMS httpclient5 shim: a TLS strategy of type "
        + target.getClass().getName() + " has no field " + name
        + "; only httpclient5 5.2's DefaultClientTlsStrategy is supported");
  }

  public PoolingHttpClientConnectionManagerBuilder setConnectionFactory(
      HttpConnectionFactory<ManagedHttpClientConnection> connectionFactory) {
    delegate.setConnectionFactory(connectionFactory);
    return this;
  }

  public PoolingHttpClientConnectionManagerBuilder setSSLSocketFactory(
      LayeredConnectionSocketFactory sslSocketFactory) {
    delegate.setSSLSocketFactory(sslSocketFactory);
    return this;
  }

  public PoolingHttpClientConnectionManagerBuilder setDnsResolver(DnsResolver dnsResolver) {
    delegate.setDnsResolver(dnsResolver);
    return this;
  }

  public PoolingHttpClientConnectionManagerBuilder setSchemePortResolver(
      SchemePortResolver schemePortResolver) {
    delegate.setSchemePortResolver(schemePortResolver);
    return this;
  }

  public PoolingHttpClientConnectionManagerBuilder setPoolConcurrencyPolicy(
      PoolConcurrencyPolicy poolConcurrencyPolicy) {
    delegate.setPoolConcurrencyPolicy(poolConcurrencyPolicy);
    return this;
  }

  public PoolingHttpClientConnectionManagerBuilder setConnPoolPolicy(
      PoolReusePolicy poolReusePolicy) {
    delegate.setConnPoolPolicy(poolReusePolicy);
    return this;
  }

  public PoolingHttpClientConnectionManagerBuilder setMaxConnTotal(int maxConnTotal) {
    delegate.setMaxConnTotal(maxConnTotal);
    return this;
  }

  public PoolingHttpClientConnectionManagerBuilder setMaxConnPerRoute(int maxConnPerRoute) {
    delegate.setMaxConnPerRoute(maxConnPerRoute);
    return this;
  }

  public PoolingHttpClientConnectionManagerBuilder setDefaultSocketConfig(SocketConfig config) {
    delegate.setDefaultSocketConfig(config);
    return this;
  }

  public PoolingHttpClientConnectionManagerBuilder setSocketConfigResolver(
      Resolver<HttpRoute, SocketConfig> resolver) {
    delegate.setSocketConfigResolver(resolver);
    return this;
  }

  public PoolingHttpClientConnectionManagerBuilder setDefaultConnectionConfig(
      ConnectionConfig config) {
    delegate.setDefaultConnectionConfig(config);
    return this;
  }

  public PoolingHttpClientConnectionManagerBuilder setConnectionConfigResolver(
      Resolver<HttpRoute, ConnectionConfig> resolver) {
    delegate.setConnectionConfigResolver(resolver);
    return this;
  }

  public PoolingHttpClientConnectionManagerBuilder setDefaultTlsConfig(TlsConfig config) {
    delegate.setDefaultTlsConfig(config);
    return this;
  }

  public PoolingHttpClientConnectionManagerBuilder setTlsConfigResolver(
      Resolver<HttpHost, TlsConfig> resolver) {
    delegate.setTlsConfigResolver(resolver);
    return this;
  }

  @Deprecated
  public PoolingHttpClientConnectionManagerBuilder setConnectionTimeToLive(TimeValue ttl) {
    delegate.setConnectionTimeToLive(ttl);
    return this;
  }

  @Deprecated
  public PoolingHttpClientConnectionManagerBuilder setValidateAfterInactivity(TimeValue value) {
    delegate.setValidateAfterInactivity(value);
    return this;
  }

  public PoolingHttpClientConnectionManagerBuilder useSystemProperties() {
    delegate.useSystemProperties();
    return this;
  }

  public PoolingHttpClientConnectionManager build() {
    return delegate.build();
  }
}
