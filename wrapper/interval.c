/* interval: Young/Daly checkpoint interval and the MTBF estimate that
 * feeds it. */
#include "interval.h"

#include <math.h>

double wr_young_interval(double delta_s, double mtbf_s)
{
	if (!(delta_s > 0) || !(mtbf_s > 0))
		return 0;
	return sqrt(2.0 * delta_s * mtbf_s);
}

double wr_daly_interval(double delta_s, double mtbf_s)
{
	if (!(delta_s > 0) || !(mtbf_s > 0))
		return 0;
	if (delta_s >= 2.0 * mtbf_s)
		return mtbf_s;
	double r = delta_s / (2.0 * mtbf_s);
	return sqrt(2.0 * delta_s * mtbf_s) * (1.0 + sqrt(r) / 3.0 + r / 9.0) - delta_s;
}

double wr_mtbf_estimate(double observed_s, int failures, double prior_mtbf_s)
{
	if (observed_s < 0)
		observed_s = 0;
	if (failures < 0)
		failures = 0;
	return (observed_s + prior_mtbf_s) / (failures + 1.0);
}

long wr_interval_steps(double interval_s, double step_s)
{
	if (!(step_s > 0) || !(interval_s > 0))
		return 1;
	double n = floor(interval_s / step_s + 0.5);
	if (n < 1)
		return 1;
	if (n > 1e9)
		return 1000000000L;
	return (long)n;
}
