/*
 * TMS compatibility shim, compiled by tms.spark.provision into the relocated httpclient5 jar.
 *
 * Iceberg 1.10 is built against httpclient5 5.5 and passes its TLS settings to
 * PoolingHttpClientConnectionManagerBuilder.setTlsSocketStrategy(TlsSocketStrategy), both new in
 * 5.4. Debian ships httpclient5 5.2, which has neither. This interface gives the missing type a
 * name (5.4's signature); the builder next to it accepts the DefaultClientTlsStrategy Iceberg
 * passes and turns it into 5.2's equivalent, an SSLConnectionSocketFactory.
 */
package org.apache.iceberg.shaded.org.apache.hc.client5.http.ssl;

import java.io.IOException;
import java.net.Socket;
import javax.net.ssl.SSLSocket;
import org.apache.iceberg.shaded.org.apache.hc.core5.http.protocol.HttpContext;

public interface TlsSocketStrategy {
  SSLSocket upgrade(Socket socket, String target, int port, Object attachment,
                    HttpContext context) throws IOException;
}
